"""From a syntax tree to a tree of named definitions, with the lines each one owns.

The per-language query (`queries/<lang>.scm`) names the definitions: a `@definition.<kind>` capture
for the node, `@name` for its name, optionally `@qualifier` for an owner named outside it (a Go
receiver, a Swift extension's type). This module adds what queries cannot say: the decorators,
annotations and doc comments just above a definition belong to it; nesting gives the qualified
name (`Invoice.generate`, `Point::fmt`); a function directly inside a class-like is a method.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor, Tree

from .grammars import query_for
from .rules import CONTAINER_KINDS, LanguageRules, rules_for

_GENERIC_ARGS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")


@dataclass
class Definition:
    """A named definition; lines are 1-based inclusive and include its attachments."""

    start_line: int
    end_line: int
    name: str
    kind: str
    start_byte: int
    end_byte: int
    children: list[Definition] = field(default_factory=list)
    # The name as written at the definition (`fmt`, `cancel!`), before any owner is prefixed.
    short_name: str = ""
    # The line holding the name: the signature, below any decorators and doc comments.
    name_line: int = 0

    @property
    def is_container(self) -> bool:
        return self.kind in CONTAINER_KINDS


def error_ratio(tree: Tree) -> float:
    """Share of the text covered by ERROR nodes (0.0 for a clean parse)."""
    root = tree.root_node
    total = root.end_byte - root.start_byte
    if not root.has_error or total <= 0:
        return 0.0
    errors = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            errors += node.end_byte - node.start_byte
            continue
        stack.extend(child for child in node.children if child.has_error)
    return errors / total


# A name longer than this, or spanning lines, is a grammar's misreading of the code, not a name:
# its definition is left out (its lines are chunked as any other). PostgreSQL cannot index a
# name of a few kB (a 9,655-character "function name" in a kernel header failed its file).
MAX_NAME_CHARS = 512


def extract(tree: Tree, language: str, source: bytes) -> list[Definition]:
    """Top-level definitions of `tree` (parsed from `source`), nested definitions as children."""
    rules = rules_for(language)
    found: dict[tuple[int, int], tuple[int, Definition]] = {}
    for pattern, captures in QueryCursor(query_for(language)).matches(tree.root_node):
        definition = _definition(captures, rules, source)
        if definition is None:
            continue
        key = (definition.start_byte, definition.end_byte)
        if key not in found or found[key][0] > pattern:
            found[key] = (pattern, definition)
    ordered = sorted((d for _, d in found.values()), key=lambda d: (d.start_byte, -d.end_byte))
    roots: list[Definition] = []
    stack: list[Definition] = []
    for definition in ordered:
        while stack and definition.start_byte >= stack[-1].end_byte:
            stack.pop()
        (stack[-1].children if stack else roots).append(definition)
        stack.append(definition)
    for root in roots:
        _qualify(root, None, rules)
    return roots


def _definition(
    captures: dict[str, list[Node]], rules: LanguageRules, source: bytes
) -> Definition | None:
    kind = next((k for k in captures if k.startswith("definition.")), None)
    names = captures.get("name")
    if kind is None or not names:
        return None
    node = captures[kind][0]
    name = rules.name_of(names, node) if rules.name_of else _text(names[0])
    if not name or len(name) > MAX_NAME_CHARS or "\n" in name:
        return None  # no name: a grammar's misreading (a macro-heavy C header's thousands of lines)
    short_name = name
    qualifier = captures.get("qualifier")
    if qualifier:
        name = _strip_generics(_text(qualifier[0])) + rules.separator + name
    kind = kind.removeprefix("definition.")
    if kind == "impl" or (rules.strip_generics and "operator" not in name):
        name = _strip_generics(name)
        short_name = _strip_generics(short_name) or short_name
    while node.parent is not None and node.parent.type in rules.wrappers:
        node = node.parent
    # `@end` marks a sibling that completes the definition (Dart: signature, then body).
    last = captures["end"][0] if "end" in captures else node
    return Definition(
        start_line=_attachments_start(node, rules, source) + 1,
        end_line=_end_row(last, source) + 1,
        name=name,
        kind=kind,
        start_byte=node.start_byte,
        end_byte=max(node.end_byte, last.end_byte),
        short_name=short_name,
        name_line=names[0].start_point[0] + 1,
    )


def _end_row(node: Node, source: bytes) -> int:
    """The last row holding text of `node`: some grammars end a node after its newline, or
    after the indentation of the next line (Scala, Groovy)."""
    row, column = node.end_point
    if row > node.start_point[0] and not source[node.end_byte - column : node.end_byte].strip():
        return row - 1
    return row


def _attachments_start(node: Node, rules: LanguageRules, source: bytes) -> int:
    """The first row of the doc comments and decorators directly above `node`."""
    start = node.start_point[0]
    prev = node.prev_named_sibling
    while prev is not None and _end_row(prev, source) >= start - 1 and _attaches(prev, rules):
        before = prev.prev_named_sibling
        if before is not None and _end_row(before, source) == prev.start_point[0]:
            break  # a trailing comment of the code before, not a leading one of ours
        start = prev.start_point[0]
        prev = before
    return start


def _attaches(node: Node, rules: LanguageRules) -> bool:
    if "comment" in node.type or node.type in rules.attachments:
        return True
    if node.type in rules.prefixed_attachments:
        return _text(node).startswith(rules.attachment_prefixes)
    return False


def _qualify(definition: Definition, parent: Definition | None, rules: LanguageRules) -> None:
    if parent is not None:
        if (
            definition.kind == "function"
            and rules.methods_in_containers
            and parent.is_container
            and parent.kind not in ("namespace", "module")
        ):
            definition.kind = "method"
        separator = dict(rules.member_separators).get(definition.kind, rules.separator)
        if not definition.name.startswith(parent.name + separator):
            definition.name = parent.name + separator + definition.name
    definition.kind = dict(rules.kind_aliases).get(definition.kind, definition.kind)
    for child in definition.children:
        _qualify(child, definition, rules)


def _text(node: Node) -> str:
    return _SPACES.sub(" ", (node.text or b"").decode("utf-8", "replace")).strip()


def _strip_generics(name: str) -> str:
    previous = None
    while previous != name:
        previous, name = name, _GENERIC_ARGS.sub("", name)
    return name.replace(" ", "").lstrip("*&")
