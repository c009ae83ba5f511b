"""`code-rag token`: tokens that open one project or one group, beside the server token.

`add` prints the new token once, in the `claude mcp add` line of its endpoint; the database
keeps only its SHA-256 digest, so nothing can show it again. `list` and `revoke` name tokens,
never show them. The running server (and every other on the database) sees each change at its
next request.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from indexer.clock import iso
from indexer.db import AccessToken
from rag_server import access
from rag_server.cli.common import ConfigOption, open_database, settings_from, user_errors
from rag_server.config import MCP_PATH, Settings, mcp_url

token_app = typer.Typer(
    help="Tokens for one project or one group (the server token opens everything).",
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _opens(settings: Settings, target: str) -> str:
    opened = access.endpoints_opened(settings, target)
    return ", ".join(f"{MCP_PATH}/{name}" for name in opened) or "nothing"


def _as_dict(token: AccessToken, settings: Settings) -> dict[str, Any]:
    return {
        "name": token.name,
        "target": token.target,
        "created_at": iso(token.created_at),
        "last_used_at": iso(token.last_used_at),
        "opens": access.endpoints_opened(settings, token.target),
    }


@token_app.command("add")
def token_add(
    target: Annotated[str, typer.Argument(help="A project or a group of rag-projects.json.")],
    name: Annotated[
        str | None,
        typer.Option(help="The token's name, for list and revoke (default: the target's)."),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Make a token for one project or one group and print it, this once.

    A project's token opens that project's endpoint; a group's token opens the group's and each
    of its projects'. Neither opens the admin endpoint. The database keeps only its digest.

    Example: code-rag token add shop --name shop-laptop
    """
    with user_errors():
        settings = settings_from(config)
        with open_database(settings) as db:
            kept, token = access.add_token(db, settings, target, name)
    if as_json:
        typer.echo(json.dumps({**_as_dict(kept, settings), "token": token}, indent=2))
        return
    typer.echo(
        f"token {kept.name} for {access.describe_target(settings, target)} opens "
        f"{_opens(settings, target)}"
    )
    typer.echo("Connect Claude Code (this is the only time the token is shown):")
    typer.echo(
        f"  claude mcp add --transport http {target} {mcp_url(settings, target)} "
        f'--header "X-RAG-Token: {token}"'
    )
    typer.echo(
        "The database keeps only its SHA-256 digest. Withdraw it with: "
        f"code-rag token revoke {kept.name}"
    )


@token_app.command("list")
def token_list(as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """List the tokens by name, never the tokens themselves.

    Shows each one's target, when it was made and last used (to the minute); --json adds the
    endpoints it opens under the configuration as it is now.

    Example: code-rag token list --json
    """
    with user_errors():
        settings = settings_from(config)
        with open_database(settings) as db:
            tokens = access.list_tokens(db)
    if as_json:
        typer.echo(json.dumps({"tokens": [_as_dict(t, settings) for t in tokens]}, indent=2))
        return
    if not tokens:
        typer.echo("no tokens yet: code-rag token add <project|group> makes one")
        return
    width = max(len("name"), *(len(t.name) for t in tokens))
    target_width = max(len("target"), *(len(t.target) for t in tokens))
    typer.echo(f"{'name':<{width}}  {'target':<{target_width}}  {'created':<25}  last used")
    for t in tokens:
        note = "" if settings.members(t.target) is not None else "  (not configured: opens nothing)"
        used = iso(t.last_used_at) or "never"
        typer.echo(
            f"{t.name:<{width}}  {t.target:<{target_width}}  {iso(t.created_at):<25}  {used}{note}"
        )


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token's name, as token list shows it.")],
    config: ConfigOption = None,
) -> None:
    """Withdraw a token: refused from the next request on, with no restart.

    Example: code-rag token revoke shop-laptop
    """
    with user_errors():
        settings = settings_from(config)
        with open_database(settings) as db:
            gone = access.revoke_token(db, name)
    typer.echo(f"revoked token {gone.name} (it opened {gone.target})")
