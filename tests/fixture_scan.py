"""An independent scan of the fixture files for the lines that open a definition: plain
regexes per language, no tree-sitter and no product code. Tests compare what the product
finds (symbol table, find_symbol, get_outline) against it."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

# One regex per definition-opening line shape; group "name" is the name as written.
SCANS: dict[str, list[str]] = {
    "navigation/dollar.js": [r"^(?:export\s+)?function\s+(?P<name>[\w$]+)"],
    "chunkers/python/invoice.py": [r"^\s*(?:async\s+)?(?:def|class)\s+(?P<name>\w+)"],
    "chunkers/go/cache.go": [
        r"^func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)",
        r"^type\s+(?P<name>\w+)",
    ],
    "chunkers/ruby/subscription.rb": [
        r"^\s*def\s+(?:self\.)?(?P<name>[\w]+[?!=]?|<=>)",
        r"^\s*(?:class|module)\s+(?P<name>\w+)",
    ],
    "chunkers/rust/geometry.rs": [
        r"^\s*(?:pub\s+)?(?:fn|struct|enum|trait|mod|type)\s+(?P<name>\w+)",
        r"^\s*macro_rules!\s+(?P<name>\w+)",
        r"^\s*impl\s+(?:[\w:]+\s+for\s+)?(?P<name>\w+)",
    ],
    "chunkers/java/OrderService.java": [
        r"^\s*(?:public\s+|private\s+|static\s+)*(?:class|interface|enum|record)\s+(?P<name>\w+)",
        r"^(?!\s*(?:throw|return|new)\b)\s*(?:public\s+|private\s+|protected\s+|static\s+|final\s+)*"
        r"(?:<[^>]+>\s+)?(?:[\w.<>, \[\]]+\s+)?(?P<name>\w+)\([^;]*\)\s*(?:throws [\w, ]+)?[{;]",
    ],
    "chunkers/javascript/cart.js": [
        r"^\s*(?:export\s+)?(?:async\s+)?(?:function\*?|class)\s+(?P<name>\w+)",
        r"^\s*(?:export\s+)?const\s+(?P<name>\w+)\s*=\s*(?:async\s+)?\(",
        r"^  (?:static\s+|async\s+|get\s+|set\s+)*(?P<name>#?\w+)\s*\([^)]*\)\s*\{",
    ],
    "chunkers/typescript/repository.ts": [
        r"^\s*(?:export\s+)?(?:abstract\s+)?(?:async\s+)?"
        r"(?:function|class|interface|enum|type|namespace)\s+(?P<name>\w+)",
        r"^\s*(?:export\s+)?const\s+(?P<name>\w+)\s*=\s*(?:async\s+)?(?:<[^>]*>)?\(",
        r"^  (?:public\s+|private\s+|protected\s+|static\s+|async\s+|readonly\s+)*"
        r"(?P<name>\w+)\s*(?:<[^>]*>)?\((?:[^)]*\)\s*(?::\s*[^{;]+)?\s*(?:\{\}?|;)?)?\s*$",
    ],
    "chunkers/c/ring_buffer.c": [
        r"^#define\s+(?P<name>\w+)\(",  # function-like macros: constants are not definitions
        r"^(?:\w+\s+)+\**(?P<name>\w+)\([^;]*$",
        r"^(?:typedef\s+)?(?:struct|enum)\s+(?P<name>\w+)\s*\{?$",
    ],
    "chunkers/php/UserRepository.php": [
        r"^\s*(?:final\s+|abstract\s+)?(?:class|interface|trait|enum)\s+(?P<name>\w+)",
        r"^\s*(?:public\s+|private\s+|protected\s+|static\s+)*function\s+(?P<name>\w+)",
    ],
}


def scan(relative: str) -> set[tuple[str, int]]:
    lines = (FIXTURES / relative).read_text().splitlines()
    found = set()
    for number, line in enumerate(lines, 1):
        for pattern in SCANS[relative]:
            m = re.match(pattern, line)
            if m and m.group("name") not in {"if", "for", "while", "switch", "return", "catch"}:
                found.add((m.group("name"), number))
                break
    return found
