"""The tool list, assembled once (every tool with the `project` argument), and the tools bound
to one endpoint, a project or a group, as the protocol sees them (`mcp.ToolBox`).

Handlers are blocking and run in worker threads. Only an unknown tool or malformed params are
protocol errors (mcp.py); a tool that cannot do its work (unusable argument values, the
database or embedder failing) answers with an error result the agent can act on.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from indexer.errors import RagError
from rag_server.tools.group import answer
from rag_server.tools.navigation import FIND_REFERENCES, FIND_SYMBOL, GET_OUTLINE, GREP
from rag_server.tools.project import INDEX_STATUS, LIST_REPOS
from rag_server.tools.schemas import PROJECT
from rag_server.tools.search import GET_CHUNK, SEARCH_CODE
from rag_server.tools.spec import ToolSpec, check_arguments, error_result, text_result

if TYPE_CHECKING:
    from rag_server.service import Endpoint, Service


def _with_project(tool: ToolSpec) -> ToolSpec:
    """`tool` taking the `project` argument every tool has."""
    schema = dict(tool.input_schema)
    schema["properties"] = {**schema.get("properties", {}), "project": PROJECT}
    schema.setdefault("required", [])
    return replace(tool, input_schema=schema)


# In the order `tools/list` shows them: the search first, then the navigation that follows it.
TOOLS: tuple[ToolSpec, ...] = tuple(
    _with_project(tool)
    for tool in (
        SEARCH_CODE,
        FIND_SYMBOL,
        GET_OUTLINE,
        GREP,
        FIND_REFERENCES,
        GET_CHUNK,
        LIST_REPOS,
        INDEX_STATUS,
    )
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


class EndpointTools:
    """The tools bound to one endpoint: every call reads the schemas of its projects only."""

    def __init__(self, service: Service, endpoint: Endpoint) -> None:
        self.service = service
        self.endpoint = endpoint

    @property
    def instructions(self) -> str:
        endpoint = self.endpoint
        roots = sum(len(p.roots) for p in endpoint.projects)
        if endpoint.single:
            what = f"the project {endpoint.name!r} ({roots} root(s))"
        else:
            what = (
                f"the group {endpoint.name!r}: the projects {', '.join(endpoint.names)} "
                f"({roots} root(s)), searched as one; every result names its project, and "
                "the argument project narrows a call to one of them"
            )
        return (
            f"Code search over {what}. Use search_code to find where something is "
            "implemented by describing it; find_symbol for where a named symbol is defined; "
            "get_outline for what a file defines; find_references for who uses a name; grep "
            "for every line with some exact text. Results point at file ranges to read."
        )

    def definitions(self, version: str) -> list[dict[str, Any]]:
        return [tool.definition(version) for tool in TOOLS]

    def has(self, name: str) -> bool:
        return name in TOOLS_BY_NAME

    def names(self) -> list[str]:
        return [tool.name for tool in TOOLS]

    async def call(self, name: str, arguments: Mapping[str, Any], version: str) -> dict[str, Any]:
        tool = TOOLS_BY_NAME[name]
        try:
            check_arguments(name, tool.input_schema, arguments)
            run = functools.partial(answer, tool, self.service, self.endpoint, arguments)
            structured = await anyio.to_thread.run_sync(run)
        except RagError as exc:
            return error_result(exc.message)
        return text_result(structured, version)
