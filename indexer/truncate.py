"""Text cut to a budget: the one rule for every place that shortens text (snippets, chunk views,
tool results, embedding inputs). A cut ends at a line break when one falls near the limit —
code reads better cut between lines than inside one — and a visible cut is marked "…".
"""

from __future__ import annotations

ELLIPSIS = "…"
# A line break counts as "near" when it falls in the last fifth of the kept text.
NEAR_SHARE = 0.8


def at_line(head: str) -> str:
    """`head` (already within budget) ended after its last line break, if that is near the end."""
    newline = head.rfind("\n")
    if newline >= 0 and newline + 1 >= int(len(head) * NEAR_SHARE):
        return head[: newline + 1]
    return head


def head(text: str, limit: int) -> str:
    """At most `limit` characters from the start of `text`, ended at a line break when near."""
    if len(text) <= limit:
        return text
    return at_line(text[: max(limit, 0)])


def cut(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """`text` within `limit` characters plus `marker` when something was cut."""
    if len(text) <= limit:
        return text
    return head(text, limit) + marker
