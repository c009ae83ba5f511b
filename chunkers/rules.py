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
    # Separator before a member of a given kind, where it differs (Ruby: `Cart#add`, `Cart.build`).
    member_separators: tuple[tuple[str, str], ...] = ()
    # Kinds the query uses only to choose a separator, renamed once names are built.
    kind_aliases: tuple[tuple[str, str], ...] = ()
    # A function directly inside a class-like is a method (not in Elixir, where modules hold
    # functions).
    methods_in_containers: bool = True
    # Drop template arguments from names: `Matrix<T, R, C>::transposed` -> `Matrix::transposed`.
    strip_generics: bool = False


def _objc_selector(names: Sequence[Node], definition: Node) -> str:
    """`- (void)add:(Item *)item count:(int)n` is the method `add:count:`."""
    if definition.type != "method_definition":
        return (names[0].text or b"").decode("utf-8", "replace")
    parts = [
        (child.text or b"").decode("utf-8", "replace")
        for child in definition.children
        if child.type == "identifier"
    ]
    if any(child.type == "method_parameter" for child in definition.children):
        return ":".join(parts) + ":"
    return "".join(parts[:1])


def _before_parenthesis(names: Sequence[Node], definition: Node) -> str:
    """Groovy's loose grammar hands over `collect(Path dir)` where the name is `collect`."""
    text = (names[0].text or b"").decode("utf-8", "replace")
    return text.split("(", 1)[0].split()[-1] if text.split("(", 1)[0].split() else ""


_JS_WRAPPERS = frozenset({"export_statement"})
_TS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})
_JS_ATTACH = frozenset({"decorator"})

_RULES: dict[str, LanguageRules] = {
    "python": LanguageRules(wrappers=frozenset({"decorated_definition"})),
    "javascript": LanguageRules(wrappers=_JS_WRAPPERS, attachments=_JS_ATTACH),
    "typescript": LanguageRules(wrappers=_TS_WRAPPERS, attachments=_JS_ATTACH),
    "tsx": LanguageRules(wrappers=_TS_WRAPPERS, attachments=_JS_ATTACH),
    "java": LanguageRules(),
    "groovy": LanguageRules(
        prefixed_attachments=frozenset({"command"}),
        attachment_prefixes=("@",),
        name_of=_before_parenthesis,
    ),
    "kotlin": LanguageRules(),
    "scala": LanguageRules(attachments=frozenset({"annotation"})),
    "csharp": LanguageRules(),
    "swift": LanguageRules(),
    "dart": LanguageRules(attachments=frozenset({"annotation", "marker_annotation"})),
    "c": LanguageRules(separator="::", wrappers=frozenset({"type_definition"})),
    "cpp": LanguageRules(
        separator="::",
        wrappers=frozenset({"template_declaration", "type_definition"}),
        strip_generics=True,
    ),
    "objc": LanguageRules(
        wrappers=frozenset({"implementation_definition", "type_definition"}),
        name_of=_objc_selector,
    ),
    "ruby": LanguageRules(
        separator="::",
        member_separators=(("method", "#"), ("singleton_method", ".")),
        kind_aliases=(("singleton_method", "method"),),
    ),
    "php": LanguageRules(separator="::", attachments=frozenset({"attribute_list"})),
    "rust": LanguageRules(
        separator="::", attachments=frozenset({"attribute_item"}), strip_generics=True
    ),
    "go": LanguageRules(),
    "elixir": LanguageRules(
        methods_in_containers=False,
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
