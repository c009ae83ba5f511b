"""Per-language facts the symbol queries cannot express.

How qualified names are joined, which parent nodes wrap a definition (decorators, `export`,
`template<>`), which preceding siblings belong to the definition below them (attributes,
annotations, Elixir's `@doc`), and the odd name that needs assembling (Objective-C selectors).
A language missing here gets the defaults: `.` joins, comments attach.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tree_sitter import Node

# Kinds whose members are chunked separately when the whole is too big. A "namespace" is opened
# whatever its size: it is a scope, not a unit anyone searches for.
CONTAINER_KINDS: frozenset[str] = frozenset(
    {
        "class",
        "interface",
        "struct",
        "enum",
        "trait",
        "impl",
        "module",
        "namespace",
        "object",
        "record",
        "protocol",
        "extension",
        "mixin",
        "union",
        "category",
        "implementation",
    }
)

NameHook = Callable[[Sequence[Node], Node], str]


@dataclass(frozen=True)
class LanguageRules:
    separator: str = "."
    # Parent node types that carry a definition's decorators, `export`, `template<...>`.
    wrappers: frozenset[str] = frozenset()
    # Preceding siblings that belong to the definition after them (comments always do).
    attachments: frozenset[str] = frozenset()
    # Preceding siblings of these types attach when their text starts with a prefix below.
    prefixed_attachments: frozenset[str] = frozenset()
    attachment_prefixes: tuple[str, ...] = ()
    # Builds the name from the @name captures when their text alone is not it.
    name_of: NameHook | None = None


def _objc_selector(names: Sequence[Node], definition: Node) -> str:
    """`- (void)add:(Item *)item count:(int)n` is the method `add:count:`."""
    parts = [(n.text or b"").decode("utf-8", "replace") for n in names]
    has_arguments = any(
        child.type in ("method_parameter", "keyword_declarator") for child in definition.children
    )
    return ":".join(parts) + ":" if has_arguments else "".join(parts)


_JS_WRAPPERS = frozenset({"export_statement"})
_TS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})
_JS_ATTACH = frozenset({"decorator"})

_RULES: dict[str, LanguageRules] = {
    "python": LanguageRules(wrappers=frozenset({"decorated_definition"})),
    "javascript": LanguageRules(wrappers=_JS_WRAPPERS, attachments=_JS_ATTACH),
    "typescript": LanguageRules(wrappers=_TS_WRAPPERS, attachments=_JS_ATTACH),
    "tsx": LanguageRules(wrappers=_TS_WRAPPERS, attachments=_JS_ATTACH),
    "java": LanguageRules(),
    "groovy": LanguageRules(attachments=frozenset({"annotation"})),
    "kotlin": LanguageRules(),
    "scala": LanguageRules(attachments=frozenset({"annotation"})),
    "csharp": LanguageRules(),
    "swift": LanguageRules(),
    "dart": LanguageRules(attachments=frozenset({"annotation", "marker_annotation"})),
    "c": LanguageRules(separator="::"),
    "cpp": LanguageRules(separator="::", wrappers=frozenset({"template_declaration"})),
    "objc": LanguageRules(name_of=_objc_selector),
    "ruby": LanguageRules(),
    "php": LanguageRules(separator="::", attachments=frozenset({"attribute_list"})),
    "rust": LanguageRules(separator="::", attachments=frozenset({"attribute_item"})),
    "go": LanguageRules(),
    "elixir": LanguageRules(
        prefixed_attachments=frozenset({"unary_operator"}),
        attachment_prefixes=("@doc", "@spec", "@impl", "@typedoc", "@deprecated", "@since"),
    ),
    "commonlisp": LanguageRules(),
    "scheme": LanguageRules(),
    "racket": LanguageRules(),
    "clojure": LanguageRules(),
}

_DEFAULT = LanguageRules()


def rules_for(language: str) -> LanguageRules:
    return _RULES.get(language, _DEFAULT)
