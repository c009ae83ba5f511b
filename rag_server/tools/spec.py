"""What a tool is, and what every tool shares: its definition as `tools/list` shows it, the
checking of its arguments against its input schema, and the shape and size bound of its result.

Every result is the same object twice: `structuredContent` matching the tool's `outputSchema`,
and its JSON as text content for clients that read only text. Results are size-bounded (Claude
Code truncates tool output above ~25k tokens; we stay near a tenth of that). A tool that cannot
do its work answers with `isError: true` and a message the agent can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from indexer.errors import InvalidArgument
from indexer.project import Project
from rag_server.mcp import STRUCTURED_OUTPUT_SINCE, fits_in_result, version_at_least
from rag_server.service import Service

# Blocking (database, query embedding): the toolbox runs it in a worker thread.
Handler = Callable[[Service, Project, Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Handler

    def definition(self, version: str) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }
        if version_at_least(version, STRUCTURED_OUTPUT_SINCE):
            definition["title"] = self.title
            definition["outputSchema"] = self.output_schema
        return definition


# --- argument checking (the subset of JSON Schema our input schemas use) ------------------------

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_arguments(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Refuse arguments the input schema does not allow, naming the argument and the fix."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if args.get(name) is None:
            raise InvalidArgument(f"{tool} needs the argument {name!r}")
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            allowed = ", ".join(properties) or "none"
            raise InvalidArgument(f"{tool} has no argument {name!r}; its arguments are {allowed}")
        if value is None and name not in schema.get("required", []):
            continue
        _check_value(tool, name, spec, value)


def _check_value(tool: str, name: str, spec: Mapping[str, Any], value: Any) -> None:
    types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
    if not any(_JSON_TYPES[t](value) for t in types):
        raise InvalidArgument(
            f"{tool}: {name} must be {' or '.join(types)}, got {json.dumps(value)[:80]}"
        )
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
        raise InvalidArgument(f"{tool}: {name} = {value} is out of range: use a value {bounds}")
    if isinstance(value, str) and len(value.strip()) < spec.get("minLength", 0):
        raise InvalidArgument(f"{tool}: {name} is empty")


# --- results ------------------------------------------------------------------------------------


def bound_list(result: dict[str, Any], key: str) -> dict[str, Any]:
    """`result` within MAX_RESULT_CHARS: entries of `result[key]` dropped from the end."""
    result["truncated"] = False
    items = result[key]
    if fits_in_result(result):
        return result
    low, high = 0, len(items)
    while low < high:  # the longest prefix that fits
        mid = (low + high + 1) // 2
        if fits_in_result({**result, key: items[:mid]}):
            low = mid
        else:
            high = mid - 1
    result[key] = items[:low]
    result["truncated"] = True
    return result


def text_result(structured: Mapping[str, Any], version: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "isError": False,
    }
    if version_at_least(version, STRUCTURED_OUTPUT_SINCE):
        result["structuredContent"] = dict(structured)
    return result


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
