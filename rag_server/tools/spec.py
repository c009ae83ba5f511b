"""What a tool is, and what every tool shares: its definition as `tools/list` shows it, the
checking of its arguments against its input schema, and the shape and size bound of its result.

Every result is the same object twice: `structuredContent` matching the tool's `outputSchema`,
and its JSON as text content for clients that read only text. Results are size-bounded by
`bound_result`, at the caller's `max_chars` or MAX_RESULT_CHARS (Claude Code truncates tool
output above ~25k tokens; we stay near a tenth of that), and say what was cut. A tool that
cannot do its work answers with `isError: true` and a message the agent can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexer import truncate
from indexer.errors import InvalidArgument
from indexer.project import Project
from rag_server.mcp import STRUCTURED_OUTPUT_SINCE, version_at_least

if TYPE_CHECKING:
    from rag_server.service import Service

# Blocking (database, query embedding): the toolbox runs it in a worker thread.
Handler = Callable[["Service", Project, Mapping[str, Any]], dict[str, Any]]


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
    allowed = spec.get("enum")
    if allowed is not None and value not in allowed:
        choices = ", ".join(map(str, allowed[:-1])) + f" or {allowed[-1]}"
        raise InvalidArgument(f"{tool}: {name} must be {choices}, got {json.dumps(value)[:80]}")
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
        raise InvalidArgument(f"{tool}: {name} = {value} is out of range: use a value {bounds}")
    if isinstance(value, str) and len(value.strip()) < spec.get("minLength", 0):
        raise InvalidArgument(f"{tool}: {name} is empty")


# --- results ------------------------------------------------------------------------------------


def bound_result(
    result: dict[str, Any],
    max_chars: int,
    *,
    rest: str,
    entries: str | None = None,
    text: str | None = None,
    floor: int = 0,
) -> dict[str, Any]:
    """`result` with its JSON (as text content carries it) within `max_chars` characters.

    `entries` names the list of a list result (None: the result is one entry itself); `text`
    the field of an entry that may be shortened, to no fewer than `floor` characters (but for
    the first entry when it is the only one left), before entries are dropped from the end.
    A cut result has `truncated: true`, and for a list `omitted` (entries dropped) and
    `shortened` (positions of shortened texts); its note says what was cut and, in `rest`,
    how to get the rest, before any note the result had. As a last resort the other strings
    are cut, the longest first."""
    cutting = _Cutting(dict(result), max_chars, rest, entries, text)
    untouched = cutting.build(None, cutting.count)
    if cutting.size(untouched) <= max_chars:
        return untouched
    # No text longer than the budget can fit whole: limits above it need no trying.
    longest = min(cutting.longest() - 1, max_chars)
    if text is not None and floor <= longest and cutting.fits(floor, cutting.count):
        limit = _largest(floor, longest, lambda n: cutting.fits(n, cutting.count))
        return cutting.build(limit, cutting.count)
    shortest = floor if text is not None else None
    if entries is None:
        return cutting.squeezed(cutting.build(shortest, 1))
    if not cutting.fits(shortest, 0):
        return cutting.squeezed(cutting.build(shortest, 0))
    keep = _largest(0, cutting.count, lambda k: cutting.fits(shortest, k))
    if shortest is None:
        return cutting.build(None, keep)
    if keep == 0 and cutting.count and cutting.fits(0, 1):
        # Not even the first entry fits with the shortest text: it keeps what room there is.
        return cutting.build(_largest(0, shortest, lambda n: cutting.fits(n, 1)), 1)
    # Fewer entries leave room: give their texts as much of it as fits.
    limit = _largest(shortest, max(shortest, longest + 1), lambda n: cutting.fits(n, keep))
    return cutting.build(limit, keep)


def _largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest value in [low, high] that fits, `low` being known to fit."""
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _json_size(payload: Any) -> int:
    return len(json.dumps(payload, ensure_ascii=False))


@dataclass(frozen=True)
class _Cutting:
    """One result being cut: `build(limit, keep)` is it with texts cut at `limit` characters
    (None: whole) and the first `keep` entries."""

    result: dict[str, Any]
    max_chars: int
    rest: str
    entries: str | None
    text: str | None

    @property
    def items(self) -> list[dict[str, Any]]:
        return self.result[self.entries] if self.entries is not None else [self.result]

    @property
    def count(self) -> int:
        return len(self.items)

    def longest(self) -> int:
        if self.text is None:
            return 0
        return max((len(str(item.get(self.text, ""))) for item in self.items), default=0)

    def shortened(self, limit: int | None, keep: int) -> tuple[list[dict[str, Any]], list[int]]:
        """The first `keep` entries with their texts cut at `limit`, and which were cut."""
        shown, cut = [], []
        for i, item in enumerate(self.items[:keep]):
            value = item.get(self.text) if self.text is not None else None
            if limit is not None and isinstance(value, str) and len(value) > limit:
                item = {**item, str(self.text): truncate.cut(value, limit)}
                cut.append(i)
            shown.append(item)
        return shown, cut

    def build(self, limit: int | None, keep: int) -> dict[str, Any]:
        shown, cut = self.shortened(limit, keep)
        if self.entries is None:
            built = {**shown[0], "truncated": bool(self.result.get("truncated")) or bool(cut)}
            if cut:
                built["note"] = self._note("the text was shortened (it ends with …)")
            return built
        omitted = self.count - keep
        built = {**self.result, self.entries: shown, "truncated": bool(omitted or cut)}
        if omitted or cut:
            built["omitted"] = omitted
            parts = [f"{omitted} of {self.count} {self.entries} left out"] if omitted else []
            if cut:
                built["shortened"] = cut
                parts.append(f"the text of {len(cut)} shortened (positions in shortened)")
            built["note"] = self._note(" and ".join(parts))
        return built

    def _note(self, what: str) -> str:
        earlier = self.result.get("note")
        note = f"Cut to fit max_chars={self.max_chars}: {what}. {self.rest}"
        return f"{note} {earlier}" if earlier else note

    def size(self, built: dict[str, Any]) -> int:
        return _json_size(built)

    def fits(self, limit: int | None, keep: int) -> bool:
        """Whether `build(limit, keep)` fits, measured a part at a time: the JSON of a list is
        its entries' JSON joined by ", " inside brackets."""
        built = self.build(limit, keep)
        if self.entries is None:
            return self.size(built) <= self.max_chars
        shown = built[self.entries]
        size = self.size({**built, self.entries: []}) + sum(map(_json_size, shown))
        return size + 2 * max(len(shown) - 1, 0) <= self.max_chars

    def squeezed(self, built: dict[str, Any]) -> dict[str, Any]:
        """`built` with its longest strings halved until it fits: the last resort when even
        no entries and no text do not fit (a long query echoed, long paths)."""
        needed = self.size(built)
        if not built["truncated"]:
            built = {**built, "truncated": True, "note": self._note("long fields shortened")}
        while self.size(built) > self.max_chars:
            strings = [(len(v), k) for k, v in built.items() if isinstance(v, str)]
            length, key = max(strings, default=(0, ""))
            if length <= 2:  # halved, with its marker, it would be no shorter
                raise InvalidArgument(
                    f"max_chars={self.max_chars} is too small for this result: "
                    f"raise it to {needed} or more"
                )
            built = {**built, key: truncate.cut(built[key], length // 2)}
        return built


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
