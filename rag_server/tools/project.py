"""`list_repos` and `index_status`: what the project's index holds and how fresh it is.

Both answer from the running service's view of the project (the database plus the sweeps in
flight and planned), so an agent can tell an empty result from an index still being built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from indexer.project import Project
from rag_server.tools.schemas import NO_INPUT, NULLABLE_STRING, PROJECT_NAME
from rag_server.tools.spec import ToolSpec

if TYPE_CHECKING:
    from rag_server.service import Service

GROUP_PROJECTS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "on a group's endpoint: its projects (`project` is the group's name)",
}

VECTORS: dict[str, Any] = {
    "type": "string",
    "enum": ["on", "off"],
    "description": "off: the server runs model-free ([embedding] provider = none): nothing is "
    "embedded or pending, search_code ranks by keywords, exact names and verbatim identifiers",
}

LIST_REPOS_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": {"type": "string"},
        "projects": GROUP_PROJECTS,
        "indexed": {"type": "boolean"},
        "last_sweep_at": NULLABLE_STRING,
        "vectors_pending": {
            "type": "integer",
            "description": "chunks and definitions still waiting for their vectors (a first "
            "index embeds them in the background; keyword and name search see them already)",
        },
        "vectors": VECTORS,
        "repos": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "project": PROJECT_NAME,
                    "repo": {"type": "string"},
                    "root": {"type": "string"},
                    "files": {"type": "integer"},
                    "chunks": {"type": "integer"},
                    "available": {"type": "boolean"},
                    "problem": NULLABLE_STRING,
                },
                "required": ["repo", "root", "files", "chunks"],
            },
        },
    },
    "required": ["project", "indexed", "last_sweep_at", "repos"],
}

INDEX_STATUS_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": {"type": "string"},
        "projects": {
            "type": "array",
            "items": {"type": "object"},
            "description": "on a group's endpoint: each project's status, as its own "
            "endpoint reports it (the fields above say what they say together)",
        },
        "indexed": {"type": "boolean"},
        "sweep_running": {"type": "boolean"},
        "next_sweep_at": NULLABLE_STRING,
        "sweep_interval_minutes": {"type": "integer"},
        "current_run": {"type": ["object", "null"]},
        "last_run": {"type": ["object", "null"]},
        "vectors_pending": {
            "type": "integer",
            "description": "chunks and definitions written before their vectors, still "
            "waiting for them: search ranks them by keyword and name only until then",
        },
        "vectors_ready": {
            "type": ["number", "null"],
            "description": "the share of the index's vectors that are in; null when vectors "
            "are off",
        },
        "vectors": VECTORS,
        "embedding": {
            "type": ["object", "null"],
            "description": "the model of the index's vectors (provider, model, dimension, "
            "and document_tokens where each text is embedded from its first N tokens); "
            '{"provider": "none"} when the server runs model-free',
        },
        "kept_embedding": {
            "type": ["object", "null"],
            "description": "model-free: the model whose vectors the index keeps from before, "
            "unused until that model is configured again",
        },
        "vectors_running": {"type": "boolean"},
        "indexer": {
            "type": "boolean",
            "description": "false when this server is a read replica: it answers from the "
            "index another server keeps fresh, and sweeps nothing itself",
        },
        "vectors_eta_seconds": {"type": ["integer", "null"]},
        "vectors_per_second": {"type": ["number", "null"]},
        "rows_progress": {
            "type": ["object", "null"],
            "description": "while a sweep runs: files read of those to read (done, total), "
            "files per second, seconds left at that rate (eta_seconds), chunks written",
        },
        "disk_bytes": {
            "type": "integer",
            "description": "the bytes the index takes on disk, its indexes included",
        },
    },
    "required": ["project", "indexed", "sweep_running", "next_sweep_at"],
}


def list_repos_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    status = service.index_status(project.name)
    return {
        "project": project.name,
        "indexed": status.indexed,
        "last_sweep_at": status.last_sweep_at,
        "vectors_pending": status.vectors_pending,
        "vectors": status.vectors,
        "repos": [
            {
                "repo": r.repo,
                "root": r.path,
                "files": r.files,
                "chunks": r.chunks,
                "available": r.available,
                "problem": r.problem,
            }
            for r in status.repos
        ],
    }


def index_status_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    return service.status(project.name)


LIST_REPOS = ToolSpec(
    "list_repos",
    "List indexed roots",
    "List the roots (repositories/folders) of this project with their folder, file and "
    "chunk counts, and when the index was last refreshed. Use a root's name as "
    "search_code's repo filter.",
    NO_INPUT,
    LIST_REPOS_OUTPUT,
    list_repos_handler,
)

INDEX_STATUS = ToolSpec(
    "index_status",
    "Index status",
    "Report the index of this project: files and chunks, the last and next sweep, "
    "whether a sweep runs now, files that failed and why, the embedding model (or vectors "
    "off: model-free), and the vectors still being embedded after a first sweep (how many, "
    "how fast, time left). "
    "Check it when search_code finds nothing you expected.",
    NO_INPUT,
    INDEX_STATUS_OUTPUT,
    index_status_handler,
)
