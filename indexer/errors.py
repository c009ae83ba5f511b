"""The one error hierarchy of code-rag.

Every error a person can act on is a `RagError` with a stable `code` and a message that says what
happened and what to do. Third-party errors (psycopg, ollama/httpx, OS) are mapped to these at
their edge; the CLI and the JSON-RPC layer each translate `RagError` exactly once.

    RagError
    ├── ConfigError              a bad application.ini / rag-projects.json value
    ├── InvalidProjectName       a name that cannot be a schema (refused before any SQL)
    ├── ProjectNotFound          no such project in the config
    ├── DatabaseError            PostgreSQL unreachable, or a statement failed
    │   ├── PgvectorMissing      the server lacks pgvector >= 0.5
    │   └── ExtensionMissing     the server lacks another extension we need (pg_trgm)
    ├── ForeignSchema            a schema we did not create (never altered or dropped)
    ├── SweepRunning             another sweep of the project holds its lock
    ├── SweepStopped             a sweep asked to stop (a server stopping) stopped between batches
    ├── ReadReplica              a sweep asked of a server that does not index ([indexer] enabled)
    ├── EmbedderError            the embedding service failed
    │   ├── EmbedderUnavailable  not reachable / not installed
    │   ├── ModelNotFound        the model is not pulled / the directory is missing
    │   ├── EmbeddingRefused     an input refused even alone and truncated
    │   └── ModelMismatch        the index was built with another model
    ├── InvalidArgument          a request argument that cannot be used
    ├── TokenNotFound            no token by that name (revoke)
    └── TokenNameTaken           a token by that name exists already (add --name)
"""

from __future__ import annotations


class RagError(Exception):
    """Base: a failure with a message for a person and a stable machine-readable code."""

    code = "rag_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(RagError):
    code = "config_error"


class InvalidProjectName(RagError):
    code = "invalid_project_name"


class ProjectNotFound(RagError):
    code = "project_not_found"


class DatabaseError(RagError):
    code = "database_error"


class PgvectorMissing(DatabaseError):
    code = "pgvector_missing"


class ExtensionMissing(DatabaseError):
    code = "extension_missing"


class ForeignSchema(RagError):
    code = "foreign_schema"


class SweepRunning(RagError):
    code = "sweep_running"


class SweepStopped(RagError):
    code = "sweep_stopped"


class ReadReplica(RagError):
    code = "read_replica"


class EmbedderError(RagError):
    code = "embedder_error"


class EmbedderUnavailable(EmbedderError):
    code = "embedder_unavailable"


class ModelNotFound(EmbedderError):
    code = "model_not_found"


class EmbeddingRefused(EmbedderError):
    code = "embedding_refused"


class ModelMismatch(EmbedderError):
    code = "model_mismatch"


class InvalidArgument(RagError):
    code = "invalid_argument"


class TokenNotFound(RagError):
    code = "token_not_found"


class TokenNameTaken(RagError):
    code = "token_name_taken"
