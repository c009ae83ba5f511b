"""A stand-in for Ollama's HTTP API, for tests: Ollama itself cannot be installed here.

It answers `/api/embed`, `/api/tags`, `/api/show`, `/api/version` (and `GET /`) with the shapes,
status codes and error texts of Ollama's docs/api.md and server/routes.go: a missing model is
404 `model "x" not found, try pulling it first` on /api/embed and 404 `model 'x' not found` on
/api/show; an input over the context with `truncate: false` is 400 `the input length exceeds the
context length` (switchable to older builds' wording and status). Like Ollama, each input of a
batch is embedded on its own, so limits are per input, and one bad input fails the whole request.
Vectors are deterministic (hashed character trigrams, normalised): `standin_vector` recomputes
them. Switches are plain attributes, changeable while it runs; counters let tests assert "zero
embedding calls". Binds 127.0.0.1 on an ephemeral port, serves from a thread.

    with OllamaStandin() as server:            # or the `ollama_standin` fixture
        embedder = OllamaEmbedder(host=server.url)
        server.poison = {"BAD"}                # refuse any input containing "BAD"
"""

from __future__ import annotations

import functools
import json
import math
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CONTEXT_ERROR = (400, "the input length exceeds the context length")  # Ollama >= 0.12
LEGACY_CONTEXT_ERROR = (500, "input exceeds maximum context length")  # older builds
NAN_ERROR = (400, "embedding contains NaN or Inf values")
RUNNER_ERROR = (500, "llama runner process has terminated: exit status 2")
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class StandinModel:
    """A model the stand-in "has pulled"."""

    name: str = "nomic-embed-text:v1.5"
    dimension: int = 768
    context_length: int = 2048
    family: str = "nomic-bert"
    parameter_size: str = "137M"
    quantization: str = "F16"
    capabilities: tuple[str, ...] = ("embedding",)


def count_tokens(text: str) -> int:
    """A deterministic token estimate: words and single punctuation marks, so dense code
    runs at 1-2 characters per token as it does with real tokenizers."""
    return len(_TOKEN.findall(text))


def head_tokens(text: str, limit: int) -> str:
    """The head of `text` holding `limit` tokens (what Ollama's truncation keeps)."""
    for i, match in enumerate(_TOKEN.finditer(text)):
        if i == limit:
            return text[: match.start()]
    return text


def standin_vector(text: str, dimension: int) -> list[float]:
    """Hashed character trigrams, signed, L2-normalised: similar texts get similar vectors."""
    acc = [0.0] * dimension
    padded = f"  {text.lower()} "
    for i in range(len(padded) - 2):
        h = zlib.crc32(padded[i : i + 3].encode("utf-8"))
        acc[h % dimension] += 1.0 if (h >> 16) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in acc)) or 1.0
    return [v / norm for v in acc]


@functools.lru_cache(maxsize=8192)
def _cached_vector(text: str, dimension: int) -> tuple[float, ...]:
    # Tests and the benchmark embed the same texts many times: hash them once.
    return tuple(standin_vector(text, dimension))


def canonical_name(name: str) -> str:
    """Ollama's default tag: "nomic-embed-text" is "nomic-embed-text:latest"."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def unreachable_url() -> str:
    """A loopback URL where nothing listens (a port just bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class OllamaStandin:
    """The server; see the module docstring. Attributes below are the switches."""

    def __init__(self, models: Iterable[StandinModel] | None = None, version: str = "0.13.0"):
        self.models = {canonical_name(m.name): m for m in (models or [StandinModel()])}
        self.version = version
        self._lock = threading.Lock()
        self.reset_switches()
        self.reset_counters()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- switches and counters ----------------------------------------------------------------

    def reset_switches(self) -> None:
        self.max_tokens: int | None = None  # per-input token limit (default: model context)
        self.max_bytes: int | None = None  # per-input byte limit, refused like the context one
        self.context_error: tuple[int, str] = CONTEXT_ERROR
        self.ignore_truncate = False  # ollama#14186: `truncate: true` refused anyway
        self.fail_every: int | None = None  # every k-th /api/embed request fails
        self.fail_requests: set[int] = set()  # these /api/embed request numbers (1-based) fail
        self.fail_error: tuple[int, str] = RUNNER_ERROR
        self.fail_all: tuple[int, str] | None = None  # every /api/embed answers this
        self.poison: set[str] = set()  # an input containing one of these is refused
        self.poison_error: tuple[int, str] = NAN_ERROR
        self.delay_seconds = 0.0  # answer /api/embed this late
        # Called with each /api/embed request's inputs before it is answered (in the stand-in's
        # thread): a test sees what is asked, in order, and can look at the world meanwhile.
        self.on_embed: Callable[[list[str]], None] | None = None

    def reset_counters(self) -> None:
        with self._lock:
            self.embed_requests = 0  # /api/embed requests received (failed ones too)
            self.embed_inputs = 0  # inputs in those requests
            self.embedded_inputs = 0  # inputs that got a vector
            self.failed_requests = 0
            self.show_requests = 0
            self.tags_requests = 0
            self.version_requests = 0
            self.batches: list[list[str]] = []  # the inputs of each /api/embed request

    @property
    def embedding_calls(self) -> int:
        return self.embed_requests

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "the stand-in is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> OllamaStandin:
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() returns within 50 ms
            name="ollama-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OllamaStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the API ------------------------------------------------------------------------------

    def _model(self, name: Any) -> StandinModel | None:
        if not isinstance(name, str) or not name:
            return None
        return self.models.get(canonical_name(name))

    def embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        started = time.perf_counter_ns()
        raw = body.get("input")
        if isinstance(raw, str):
            inputs = [raw] if raw else []
        elif isinstance(raw, list) and all(isinstance(v, str) for v in raw):
            inputs = list(raw)
        elif raw is None:
            inputs = []
        else:
            return 400, {"error": "invalid input type"}
        with self._lock:
            self.embed_requests += 1
            number = self.embed_requests
            self.embed_inputs += len(inputs)
            self.batches.append(inputs)
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        if self.on_embed is not None:
            self.on_embed(inputs)
        model = self._model(body.get("model"))
        if model is None:
            return self._fail(
                (404, f"model {json.dumps(body.get('model', ''))} not found, try pulling it first")
            )
        if self.fail_all is not None:
            return self._fail(self.fail_all)
        if (self.fail_every and number % self.fail_every == 0) or number in self.fail_requests:
            return self._fail(self.fail_error)
        if not inputs:
            return 200, {"model": body.get("model"), "embeddings": []}
        truncate = body.get("truncate", True) is not False and not self.ignore_truncate
        limit = self.max_tokens if self.max_tokens is not None else model.context_length
        vectors, tokens = [], 0
        for text in inputs:
            if any(p in text for p in self.poison):
                return self._fail(self.poison_error)
            if self.max_bytes is not None and len(text.encode("utf-8")) > self.max_bytes:
                return self._fail(self.context_error)
            count = count_tokens(text)
            if count > limit:
                if not truncate:
                    return self._fail(self.context_error)
                text, count = head_tokens(text, limit), limit
            tokens += count
            vectors.append(list(_cached_vector(text, model.dimension)))
        with self._lock:
            self.embedded_inputs += len(inputs)
        elapsed = time.perf_counter_ns() - started
        return 200, {
            "model": body.get("model"),
            "embeddings": vectors,
            "total_duration": elapsed,
            "load_duration": 1000,
            "prompt_eval_count": tokens,
        }

    def _fail(self, error: tuple[int, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.failed_requests += 1
        return error[0], {"error": error[1]}

    def show(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.show_requests += 1
        name = body.get("model") or body.get("name")
        if not name:
            return 400, {"error": "model is required"}
        model = self._model(name)
        if model is None:
            return 404, {"error": f"model '{name}' not found"}
        arch = model.family
        return 200, {
            "license": "",
            "modelfile": f'# Modelfile generated by "ollama show"\nFROM {model.name}\n',
            "parameters": "num_ctx                        8192",
            "template": "{{ .Prompt }}",
            "details": _details(model),
            "model_info": {
                "general.architecture": arch,
                "general.parameter_count": 136727040,
                f"{arch}.context_length": model.context_length,
                f"{arch}.embedding_length": model.dimension,
                f"{arch}.block_count": 12,
                f"{arch}.pooling_type": 1,
            },
            "capabilities": list(model.capabilities),
            "modified_at": "2025-01-01T00:00:00.000000000Z",
        }

    def tags(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.tags_requests += 1
        models = [
            {
                "name": m.name,
                "model": m.name,
                "modified_at": "2025-01-01T00:00:00.000000000Z",
                "size": 274302450,
                "digest": f"{zlib.crc32(m.name.encode()):08x}" * 8,
                "details": _details(m),
            }
            for m in self.models.values()
        ]
        return 200, {"models": models}

    def version_info(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.version_requests += 1
        return 200, {"version": self.version}


def _details(model: StandinModel) -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": model.family,
        "families": [model.family],
        "parameter_size": model.parameter_size,
        "quantization_level": model.quantization,
    }


class _Handler(BaseHTTPRequestHandler):
    owner: OllamaStandin
    protocol_version = "HTTP/1.1"  # keep-alive, as the ollama client (httpx) expects
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            self._json(*self.owner.tags())
        elif self.path == "/api/version":
            self._json(*self.owner.version_info())
        elif self.path == "/":
            self._text(200, "Ollama is running")
        else:
            self._text(404, "404 page not found")

    def do_HEAD(self) -> None:
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        routes = {"/api/embed": self.owner.embed, "/api/show": self.owner.show}
        route = routes.get(self.path)
        if route is None:
            self._text(404, "404 page not found")
            return
        if not raw:
            self._json(400, {"error": "missing request body"})
            return
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._json(400, {"error": str(exc)})
            return
        if not isinstance(body, dict):
            self._json(400, {"error": "json: cannot unmarshal into Go value"})
            return
        self._json(*route(body))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json; charset=utf-8")

    def _text(self, status: int, text: str) -> None:
        self._send(status, text.encode("utf-8"), "text/plain; charset=utf-8")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status, HTTPStatus(status).phrase)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


@pytest.fixture
def ollama_standin() -> Iterator[OllamaStandin]:
    """A running stand-in with nomic-embed-text:v1.5, fresh switches and counters per test."""
    with OllamaStandin() as server:
        yield server
