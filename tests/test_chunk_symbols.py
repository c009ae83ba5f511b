"""Symbol-aware chunking, language by language, on fixtures of real-looking code.

Each fixture is chunked with a small configuration (so classes are big enough to be split) and
the exact (symbol, kind, start_line, end_line) sequence is asserted: a change here is a change in
what agents get back as pointers, and should come with a CHUNKER_VERSION bump.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkers import ChunkerConfig, chunk_file

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"
SMALL = ChunkerConfig(max_chars=600, target_chars=350, min_chars=120, char_overlap=60)

Row = tuple[str | None, str, int, int]

EXPECTED: dict[str, tuple[str, list[Row]]] = {
    "c/ring_buffer.c": ("c", [
        (None, "block", 1, 12),
        ("ring_buffer", "struct", 14, 19),
        ("rb_used", "function", 21, 30),
        ("rb_write", "function", 32, 48),
        ("rb_read", "function", 50, 59),
        ("rb_peek", "function", 61, 73),
    ]),
    "clojure/orders.clj": ("clojure", [
        (None, "block", 1, 9),
        ("Fulfilment", "protocol", 11, 15),
        ("subtotal", "function", 17, 20),
        ("total", "function", 22, 30),
        (None, "block", 32, 40),
        ("validate", "function", 42, 47),
    ]),
    "commonlisp/inventory.lisp": ("commonlisp", [
        (None, "block", 1, 15),
        ("warehouse", "class", 17, 20),
        ("restock", "function", 22, 30),
        ("total-value", "function", 32, 34),
        ("describe-stock", "method", 36, 49),
    ]),
    "cpp/matrix.hpp": ("cpp", [
        ("linalg::Matrix", "class_header", 1, 18),
        ("linalg::Matrix::operator()", "method", 20, 28),
        ("linalg::Matrix::operator*", "method", 30, 39),
        ("linalg::Matrix::check", "method", 41, 49),
        ("linalg::Matrix::transposed", "function", 51, 57),
        ("linalg::operator<<", "function", 59, 72),
    ]),
    "csharp/AccountController.cs": ("csharp", [
        (None, "block", 1, 8),
        ("Example.Bank.Api.AccountController", "class_header", 9, 15),
        ("Example.Bank.Api.AccountController.AccountController", "method", 17, 21),
        ("Example.Bank.Api.AccountController.Get", "method", 23, 33),
        ("Example.Bank.Api.AccountController.Transfer", "method", 35, 45),
        ("Example.Bank.Api.AccountController.Transfer", "method", 41, 49),
        ("Example.Bank.Api.AccountController.Rich", "method", 51, 52),
        ("Example.Bank.Api.IAccountStore", "interface", 54, 61),
        ("Example.Bank.Api.Money", "struct", 63, 69),
    ]),
    "dart/counter_bloc.dart": ("dart", [
        (None, "block", 1, 13),
        ("CounterBloc", "class_header", 15, 26),
        ("CounterBloc._handle", "method", 28, 47),
        (None, "block", 49, 57),
        ("main", "function", 59, 64),
    ]),
    "elixir/rate_limiter.ex": ("elixir", [
        ("MyApp.RateLimiter", "class_header", 1, 14),
        ("MyApp.RateLimiter.start_link", "function", 16, 20),
        ("MyApp.RateLimiter.take", "function", 22, 28),
        ("MyApp.RateLimiter.init", "function", 30, 37),
        ("MyApp.RateLimiter.handle_call", "function", 39, 49),
        ("MyApp.RateLimiter.handle_info", "function", 51, 55),
        ("MyApp.RateLimiter.limited", "macro", 57, 67),
        ("MyApp.Describable", "protocol", 69, 72),
    ]),
    "go/cache.go": ("go", [
        (None, "block", 1, 15),
        ("Cache", "struct", 17, 23),
        ("Store", "interface", 25, 29),
        ("New", "function", 31, 37),
        ("Cache.Get", "method", 39, 49),
        ("Cache.Set", "method", 51, 56),
        ("Cache.Sweep", "method", 58, 70),
    ]),
    "groovy/BuildHelper.groovy": ("groovy", [
        ("ArtifactPublisher", "class_header", 1, 18),
        ("ArtifactPublisher.collect", "method", 20, 28),
        ("ArtifactPublisher.publish", "method", 30, 43),
        ("ArtifactPublisher.upload", "method", 45, 48),
        (None, "block", 50, 60),
    ]),
    "java/OrderService.java": ("java", [
        (None, "block", 1, 6),
        ("OrderService", "class_header", 8, 19),
        ("OrderService.find", "method", 21, 29),
        ("OrderService.place", "method", 31, 44),
        ("OrderService.place", "method", 38, 48),
        ("OrderService.sortedBy", "method", 50, 52),
        ("OrderService.Status", "enum", 54, 66),
        ("OrderLookup", "interface", 68, 70),
    ]),
    "javascript/cart.js": ("javascript", [
        (None, "block", 1, 6),
        ("Cart", "class_header", 8, 17),
        ("Cart.add", "method", 19, 26),
        ("Cart.remove", "method", 28, 33),
        ("Cart.total", "method", 35, 41),
        ("Cart.fromJSON", "method", 43, 50),
        ("summary", "function", 52, 56),
        ("debounce", "function", 58, 64),
        ("loadCart", "function", 66, 74),
    ]),
    "kotlin/Inventory.kt": ("kotlin", [
        (None, "block", 1, 7),
        ("StockEvent", "interface", 9, 12),
        ("Inventory", "class_header", 14, 18),
        ("Inventory.receive", "method", 20, 26),
        ("Inventory.ship", "method", 28, 34),
        ("Inventory.lowStock", "method", 36, 37),
        ("Inventory.events", "method", 39, 43),
        ("Inventory.companion", "object", 45, 50),
        ("InventoryRegistry", "object", 52, 55),
        ("main", "function", 57, 63),
    ]),
    "objc/NetworkClient.m": ("objc", [
        (None, "block", 1, 10),
        ("NetworkClient", "interface", 12, 15),
        ("NetworkClient", "class_header", 17, 26),
        ("NetworkClient.fetchPath:completion:", "method", 28, 35),
        ("NetworkClient.fetchPath:completion:", "method", 32, 43),
        ("NetworkClient", "block", 45, 53),
        ("NCDescribeError", "function", 55, 57),
    ]),
    "php/UserRepository.php": ("php", [
        (None, "block", 1, 13),
        ("UserRepository", "class_header", 15, 25),
        ("UserRepository::find", "method", 27, 35),
        ("UserRepository::save", "method", 37, 56),
        ("Timestamps", "trait", 58, 69),
    ]),
    "python/invoice.py": ("python", [
        (None, "block", 1, 12),
        ("LineItem", "class", 15, 21),
        ("Repository", "class", 24, 34),
        ("Invoice", "class_header", 37, 47),
        ("Invoice.subtotal", "method", 49, 52),
        ("Invoice.tax", "method", 54, 56),
        ("Invoice.from_order", "method", 58, 65),
        ("Invoice.generate", "method", 67, 77),
        ("send_all", "function", 80, 90),
        (None, "block", 93, 95),
    ]),
    "racket/shapes.rkt": ("racket", [
        (None, "block", 1, 12),
        ("area", "function", 14, 22),
        ("scale", "function", 24, 27),
        ("largest", "function", 29, 33),
        ("test", "module", 35, 41),
    ]),
    "ruby/subscription.rb": ("ruby", [
        ("Billing", "class_header", 1, 8),
        ("Billing::Subscription", "class_header", 10, 17),
        ("Billing::Subscription#initialize", "method", 19, 23),
        ("Billing::Subscription#next_renewal", "method", 25, 30),
        ("Billing::Subscription#cancel!", "method", 32, 38),
        ("Billing::Subscription", "block", 40, 53),
        ("Billing.monthly_total", "method", 55, 58),
    ]),
    "rust/geometry.rs": ("rust", [
        (None, "block", 1, 13),
        ("Point", "class_header", 15, 26),
        ("Point::rotate", "method", 28, 37),
        ("Point", "impl", 39, 43),
        ("Point", "impl", 45, 51),
        (None, "block", 53, 69),
        ("convert", "module", 71, 77),
        ("centroid", "function", 79, 85),
    ]),
    "scala/Ledger.scala": ("scala", [
        (None, "block", 1, 11),
        ("Ledger", "class_header", 13, 18),
        ("Ledger.post", "method", 20, 29),
        ("Ledger.report", "method", 31, 44),
        ("Ledger", "object", 46, 57),
    ]),
    "scheme/queue.scm": ("scheme", [
        (None, "block", 1, 13),
        ("dequeue", "function", 15, 26),
        ("list->queue", "function", 28, 35),
        ("with-queue", "macro", 37, 44),
    ]),
    "swift/WeatherStore.swift": ("swift", [
        ("Forecast", "struct", 1, 10),
        ("WeatherService", "protocol", 12, 19),
        ("WeatherStore", "class_header", 21, 30),
        ("WeatherStore.refresh", "method", 32, 40),
        ("WeatherStore.warmest", "method", 42, 50),
        ("Forecast", "extension", 52, 60),
        ("averageHigh", "function", 62, 65),
    ]),
    "tsx/TodoList.tsx": ("tsx", [
        (None, "block", 1, 14),
        ("TodoList", "function", 16, 35),
        ("TodoList", "function", 26, 47),
        ("FilterBar", "function", 49, 57),
        ("TodoErrorBoundary", "class", 59, 73),
    ]),
    "typescript/repository.ts": ("typescript", [
        (None, "block", 1, 4),
        ("User", "interface", 6, 17),
        ("Repository", "class_header", 19, 27),
        ("Repository.get", "method", 29, 40),
        ("Repository.save", "method", 42, 55),
        ("Permissions.canEdit", "function", 57, 60),
        ("byEmail", "function", 62, 68),
        ("Deprecated", "function", 70, 78),
    ]),
}  # fmt: skip


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_symbols_and_line_ranges(fixture: str) -> None:
    # Guards the pointers agents receive: qualified symbol, kind and exact line range.
    language, expected = EXPECTED[fixture]
    result = chunk_file(fixture, (FIXTURES / fixture).read_bytes(), SMALL)
    assert result.fallback is None
    assert result.language == language
    got = [(c.symbol, c.kind, c.start_line, c.end_line) for c in result.chunks]
    assert got == expected
    assert {c.language for c in result.chunks} == {language}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_chunk_content_is_the_source_lines(fixture: str) -> None:
    # Content must be exactly the lines it points at, so a reader of the range sees the same code.
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()
    for chunk in chunk_file(fixture, (FIXTURES / fixture).read_bytes(), SMALL).chunks:
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.content.strip()
