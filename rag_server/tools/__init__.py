"""The MCP tools of one endpoint (a project, or a group of projects): their specs (schemas,
descriptions written for an agent) and handlers, and the toolbox that binds them to an endpoint.

    spec.py        what a tool is; argument checks; results and their size bound
    schemas.py     the schema fragments several tools share, result budgets among them
    search.py      search_code, get_chunk
    navigation.py  find_symbol, get_outline, grep, find_references
    project.py     list_repos, index_status
    group.py       the tools over an endpoint's projects: one, or a group's
    toolbox.py     the tool list, and the tools bound to one endpoint

The face loads each module when one of its names is first used: the command line's options
read the result budgets without loading the tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.lazy import lazy_names

if TYPE_CHECKING:
    from rag_server.tools.group import answer
    from rag_server.tools.navigation import lines_result, outline_result, symbols_result
    from rag_server.tools.schemas import MIN_RESULT_CHARS, Budget, Detail
    from rag_server.tools.search import search_result
    from rag_server.tools.spec import ToolSpec, check_arguments
    from rag_server.tools.toolbox import TOOLS, TOOLS_BY_NAME, EndpointTools

# Each name of the face and the module of this wing that defines it.
_HOMES = {
    "answer": "group",
    "lines_result": "navigation",
    "outline_result": "navigation",
    "symbols_result": "navigation",
    "MIN_RESULT_CHARS": "schemas",
    "Budget": "schemas",
    "Detail": "schemas",
    "search_result": "search",
    "ToolSpec": "spec",
    "check_arguments": "spec",
    "TOOLS": "toolbox",
    "TOOLS_BY_NAME": "toolbox",
    "EndpointTools": "toolbox",
}

# The results of the tools that return code, for the CLI to print as the tools answer; and
# `answer`, a tool's structured result over an endpoint, for the web pages to show.
__all__ = [
    "MIN_RESULT_CHARS",
    "TOOLS",
    "TOOLS_BY_NAME",
    "Budget",
    "Detail",
    "EndpointTools",
    "ToolSpec",
    "answer",
    "check_arguments",
    "lines_result",
    "outline_result",
    "search_result",
    "symbols_result",
]


__getattr__ = lazy_names(__name__, _HOMES, globals())
