"""How a project's statements are composed: its schema as a value, validated once, and what
both sides of the database share to run them (typed rows, LIKE escaping).

A `Schema` is made from a project name that passed `validate_project_name`; statements that
touch a project hold the placeholder `{schema}`, filled only here, only with
`psycopg.sql.Identifier`. No string reaches SQL unchecked, and no statement checks it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import class_row

from indexer.project import validate_project_name

Conn = psycopg.Connection[Any]


@dataclass(frozen=True, slots=True)
class Schema:
    """The schema of one project; constructing it validates the name (InvalidProjectName)."""

    name: str

    def __post_init__(self) -> None:
        validate_project_name(self.name)

    def sql(self, text: str, **literals: Any) -> pgsql.Composed:
        """`text` with `{schema}` as this schema and each `{key}` as a quoted literal."""
        extra = {k: pgsql.Literal(v) for k, v in literals.items()}
        return pgsql.SQL(text).format(schema=pgsql.Identifier(self.name), **extra)

    def table(self, table: str) -> pgsql.Identifier:
        """`table` of this schema, qualified and quoted."""
        return pgsql.Identifier(self.name, table)


def typed_rows(conn: Conn, cls: type[Any], query: Any, params: Any = None, **kw: Any) -> list[Any]:
    """Every row of `query` as a `cls` (a dataclass whose fields are the selected columns)."""
    with conn.cursor(row_factory=class_row(cls)) as cur:
        return cur.execute(query, params, **kw).fetchall()


def like_escape(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (backslash is LIKE's default escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
