"""What the pages show, read from the service: an endpoint's status, and the tools' answers as
the agent gets them, shaped for the templates (links built here, code highlighted here).

Every function here is blocking (database, embedder) and runs off the event loop. Results come
from the same functions the MCP tools run (`tools.answer`), with the same arguments checked the
same way, so a page shows exactly what an agent would get.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from indexer.db import Schema, store
from indexer.search import DEFAULT_TOP_K, MAX_TOP_K
from rag_server.service import Endpoint, Service
from rag_server.tools import TOOLS_BY_NAME, answer, check_arguments
from rag_server.web.highlight import highlight

WEB_PATH = "/web"
SWEEPS_SHOWN = 5
# The search box: a mode per tool, chosen by the selector or by a prefix of the query.
MODES = {
    "search": "search_code",
    "symbol": "find_symbol",
    "grep": "grep",
    "refs": "find_references",
}
DETAILS = ("pointers", "snippets", "full")


def page_url(endpoint: str, part: str = "", **query: object) -> str:
    """The URL of a page of `endpoint`: its name is a validated identifier, every query value
    is percent-encoded (a path such as `javascript:…` stays a parameter)."""
    url = f"{WEB_PATH}/p/{endpoint}" + (f"/{part}" if part else "")
    given = {k: v for k, v in query.items() if v is not None and v != ""}
    return url + ("?" + urlencode(given) if given else "")


# --- status ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectView:
    """One project's status: what `index_status` says, the last sweeps and the disk it takes."""

    name: str
    status: dict[str, Any]
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    disk_bytes: int | None = None

    @property
    def busy(self) -> bool:
        """Whether work runs that the page should follow (it then refreshes itself)."""
        s = self.status
        return bool(
            s.get("sweep_running")
            or s.get("current_run")
            or s.get("vectors_running")
            or s.get("vectors_queued")
            or (s.get("vectors_pending") and s.get("indexer"))
        )


def project_view(service: Service, name: str) -> ProjectView:
    """A project's status with its last SWEEPS_SHOWN sweeps and its size on disk."""
    status = service.status(name)
    sweeps: list[dict[str, Any]] = []
    size = None
    if status.get("indexed"):
        schema = Schema(name)
        with service.db.reading(f"reading the sweeps of {name}") as conn:
            records = store.last_sweeps(conn, schema, limit=SWEEPS_SHOWN)
            size = store.disk_bytes(conn, schema)
        for record in records:
            report = record.report or {}
            seconds = None
            if record.finished_at is not None:
                seconds = (record.finished_at - record.started_at).total_seconds()
            sweeps.append(
                {
                    "started_at": record.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                    "outcome": record.outcome,
                    "seconds": seconds,
                    "files_changed": report.get("files_changed", 0),
                    "files_deleted": report.get("files_deleted", 0),
                    "files_failed": report.get("files_failed", 0),
                    "error": report.get("error"),
                }
            )
    return ProjectView(name, status, sweeps, size)


def endpoint_views(service: Service, endpoint: Endpoint) -> list[ProjectView]:
    return [project_view(service, p.name) for p in endpoint.projects]


def overview(service: Service, names: list[str]) -> list[dict[str, Any]]:
    """The home page's rows: each project and group this viewer sees, with its counts."""
    settings = service.settings
    rows = []
    for name in names:
        members = settings.members(name) or ()
        statuses = [service.index_status(m) for m in members if m in settings.projects]
        pending = sum(s.vectors_pending for s in statuses)
        chunks = sum(s.chunks for s in statuses)
        rows.append(
            {
                "name": name,
                "url": page_url(name),
                "group": name in settings.groups,
                "members": list(members),
                "indexed": all(s.indexed for s in statuses),
                "files": sum(s.files for s in statuses),
                "chunks": chunks,
                "failed": sum(s.failed_files for s in statuses),
                "pending": pending,
                "ready": _ready([s.vectors_ready for s in statuses], chunks),
                "roots_missing": sum(1 for s in statuses for r in s.repos if not r.available),
                "running": any(s.sweep_running for s in statuses),
            }
        )
    return rows


def _ready(shares: list[float | None], chunks: int) -> float | None:
    """The least share of vectors ready among a row's projects; None when they are
    model-free (vectors off)."""
    known = [share for share in shares if share is not None]
    if not known:
        return None if shares else 1.0
    return 1.0 if not chunks else min(known)


# --- the search box -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ask:
    """What the search box asked: the mode (prefix or selector), the text, the filters."""

    mode: str
    text: str
    project: str | None
    language: str | None
    path_glob: str | None
    detail: str
    top_k: int

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Ask:
        text = (query.get("q") or "").strip()
        mode = query.get("mode") or "search"
        if mode not in MODES:
            mode = "search"
        head, colon, rest = text.partition(":")
        if colon and head.strip().lower() in MODES:
            mode, text = head.strip().lower(), rest.strip()
        detail = query.get("detail") or "snippets"
        try:
            top_k = min(max(int(query.get("top_k") or DEFAULT_TOP_K), 1), MAX_TOP_K)
        except ValueError:
            top_k = DEFAULT_TOP_K
        return cls(
            mode=mode,
            text=text,
            project=query.get("project") or None,
            language=(query.get("language") or "").strip() or None,
            path_glob=(query.get("path_glob") or "").strip() or None,
            detail=detail if detail in DETAILS else "snippets",
            top_k=top_k,
        )

    def arguments(self) -> dict[str, Any]:
        """The tool's arguments, as an agent would send them."""
        args: dict[str, Any] = {"detail": self.detail}
        if self.mode == "search":
            args.update(query=self.text, top_k=self.top_k)
        elif self.mode == "grep":
            args["pattern"] = self.text
        else:
            args["name"] = self.text
        for key in ("project", "language", "path_glob"):
            value = getattr(self, key)
            if value:
                args[key] = value
        return args


def run_tool(service: Service, endpoint: Endpoint, tool: str, args: dict[str, Any]) -> Any:
    """The tool's structured result, checked and computed as for an agent; RagError (bad
    arguments, a failing database or embedder) carries the message an agent would read."""
    spec = TOOLS_BY_NAME[tool]
    check_arguments(tool, spec.input_schema, args)
    return answer(spec, service, endpoint, args)


def _code(text: str | None, path: str, first: int, language: str | None = None) -> Markup | None:
    return None if text is None else highlight(text, path=path, language=language, first=first)


def search_view(service: Service, endpoint: Endpoint, ask: Ask) -> dict[str, Any]:
    """The search box's answer: the tool's result and its entries, ready for the template."""
    tool = MODES[ask.mode]
    result = run_tool(service, endpoint, tool, ask.arguments())
    name = endpoint.name
    entries: list[dict[str, Any]] = []
    if ask.mode == "search":
        for hit in result["hits"]:
            project = None if endpoint.single else hit.get("project")
            entries.append(
                {
                    **hit,
                    "chunk_url": page_url(name, f"chunk/{hit['chunk_id']}", project=project),
                    "outline_url": page_url(
                        name, "outline", repo=hit["repo"], path=hit["path"], project=project
                    ),
                    "code": _code(
                        hit.get("text", hit.get("snippet")), hit["path"], hit["start_line"]
                    ),
                    "also": [
                        {
                            **also,
                            "url": page_url(name, f"chunk/{also['chunk_id']}", project=project),
                        }
                        for also in hit.get("also") or []
                    ],
                }
            )
    elif ask.mode == "symbol":
        for symbol in result["symbols"]:
            project = None if endpoint.single else symbol.get("project")
            chunk = symbol.get("chunk_id")
            text = symbol.get("text", symbol.get("signature"))
            entries.append(
                {
                    **symbol,
                    "chunk_url": None
                    if chunk is None
                    else page_url(name, f"chunk/{chunk}", project=project),
                    "outline_url": page_url(
                        name, "outline", repo=symbol["repo"], path=symbol["path"], project=project
                    ),
                    "code": _code(text, symbol["path"], symbol["start_line"], symbol["language"]),
                }
            )
    else:
        key = "matches" if ask.mode == "grep" else "references"
        for line in result[key]:
            project = None if endpoint.single else line.get("project")
            entries.append(
                {
                    **line,
                    "outline_url": page_url(
                        name, "outline", repo=line["repo"], path=line["path"], project=project
                    ),
                    "code": _code(line.get("text"), line["path"], line["line"]),
                }
            )
    return {"tool": tool, "result": result, "entries": entries}


def chunk_view(
    service: Service, endpoint: Endpoint, chunk_id: int, project: str | None
) -> dict[str, Any]:
    args: dict[str, Any] = {"chunk_id": chunk_id, "context_lines": 0}
    if project:
        args["project"] = project
    chunk = run_tool(service, endpoint, "get_chunk", args)
    owner = None if endpoint.single else chunk.get("project", project)
    return {
        "chunk": chunk,
        "code": _code(
            chunk.get("text"), chunk["path"], chunk["text_start_line"], chunk.get("language")
        ),
        "outline_url": page_url(
            endpoint.name, "outline", repo=chunk["repo"], path=chunk["path"], project=owner
        ),
    }


def outline_view(
    service: Service, endpoint: Endpoint, repo: str, path: str, project: str | None
) -> dict[str, Any]:
    args: dict[str, Any] = {"repo": repo, "path": path, "detail": "snippets"}
    if project:
        args["project"] = project
    return {"outline": run_tool(service, endpoint, "get_outline", args)}
