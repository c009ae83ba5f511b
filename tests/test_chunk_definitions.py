"""The definitions found in each fixture: qualified names, kinds and line ranges.

This is the layer under the chunks: every function, method, class, impl, module and macro the
language's query must find, with its doc comments and decorators/annotations counted in its
lines. Chunks may merge small definitions, so this is where `Point::fmt` or `Cache.Get` is
checked even when its chunk is named after a bigger neighbour.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkers import detect_language
from chunkers.grammars import parser_for
from chunkers.symbols import Definition, extract
from chunkers.text import decode

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"

Row = tuple[str, str, int, int]

DEFINITIONS: dict[str, list[Row]] = {
    "c/ring_buffer.c": [
        ("RB_MIN", "macro", 12, 12),
        ("ring_buffer", "struct", 14, 19),
        ("rb_status", "enum", 21, 25),
        ("rb_used", "function", 27, 30),
        ("rb_write", "function", 32, 48),
        ("rb_read", "function", 50, 59),
        ("rb_peek", "function", 61, 68),
        ("rb_reset", "function", 70, 73),
    ],
    "clojure/orders.clj": [
        ("Fulfilment", "protocol", 11, 13),
        ("Order", "record", 15, 15),
        ("subtotal", "function", 17, 20),
        ("round-cents", "function", 22, 23),
        ("total", "function", 25, 30),
        ("notify", "function", 32, 32),
        ("notify", "method", 34, 35),
        ("with-order-lock", "macro", 37, 40),
        ("validate", "function", 42, 47),
    ],
    "commonlisp/inventory.lisp": [
        ("item", "struct", 12, 15),
        ("warehouse", "class", 17, 20),
        ("restock", "function", 22, 30),
        ("total-value", "function", 32, 34),
        ("describe-stock", "method", 36, 37),
        ("describe-stock", "method", 39, 45),
        ("with-warehouse", "macro", 47, 49),
    ],
    "cpp/matrix.hpp": [
        ("linalg", "namespace", 8, 72),
        ("linalg::Matrix", "class", 10, 49),
        ("linalg::Matrix::Matrix", "method", 16, 16),
        ("linalg::Matrix::Matrix", "method", 18, 18),
        ("linalg::Matrix::operator()", "method", 20, 23),
        ("linalg::Matrix::operator()", "method", 25, 28),
        ("linalg::Matrix::operator*", "method", 30, 39),
        ("linalg::Matrix::check", "method", 44, 46),
        ("linalg::Matrix::transposed", "function", 51, 57),
        ("linalg::Shape", "struct", 59, 62),
        ("linalg::operator<<", "function", 64, 70),
    ],
    "csharp/AccountController.cs": [
        ("Example.Bank.Api", "namespace", 7, 69),
        ("Example.Bank.Api.AccountController", "class", 9, 52),
        ("Example.Bank.Api.AccountController.AccountController", "method", 17, 21),
        ("Example.Bank.Api.AccountController.Get", "method", 23, 33),
        ("Example.Bank.Api.AccountController.Transfer", "method", 35, 49),
        ("Example.Bank.Api.AccountController.Rich", "method", 51, 51),
        ("Example.Bank.Api.TransferRequest", "record", 54, 54),
        ("Example.Bank.Api.IAccountStore", "interface", 56, 61),
        ("Example.Bank.Api.IAccountStore.FindAsync", "method", 58, 58),
        ("Example.Bank.Api.IAccountStore.SaveAsync", "method", 59, 59),
        ("Example.Bank.Api.IAccountStore.All", "method", 60, 60),
        ("Example.Bank.Api.Money", "struct", 63, 68),
        ("Example.Bank.Api.Money.ToString", "method", 67, 67),
    ],
    "dart/counter_bloc.dart": [
        ("CounterEvent", "class", 5, 6),
        ("Increment", "class", 8, 11),
        ("Reset", "class", 13, 13),
        ("CounterBloc", "class", 15, 47),
        ("CounterBloc.CounterBloc", "method", 17, 19),
        ("CounterBloc.state", "method", 25, 26),
        ("CounterBloc.states", "method", 28, 28),
        ("CounterBloc.add", "method", 30, 30),
        ("CounterBloc._handle", "method", 32, 41),
        ("CounterBloc.close", "method", 43, 46),
        ("Loggable", "mixin", 49, 51),
        ("Loggable.log", "method", 50, 50),
        ("CounterX", "extension", 53, 55),
        ("CounterX.isZero", "method", 54, 54),
        ("Direction", "enum", 57, 57),
        ("main", "function", 59, 64),
    ],
    "elixir/rate_limiter.ex": [
        ("MyApp.RateLimiter", "module", 1, 67),
        ("MyApp.RateLimiter.start_link", "function", 16, 20),
        ("MyApp.RateLimiter.take", "function", 22, 28),
        ("MyApp.RateLimiter.init", "function", 32, 37),
        ("MyApp.RateLimiter.handle_call", "function", 39, 49),
        ("MyApp.RateLimiter.handle_info", "function", 51, 55),
        ("MyApp.RateLimiter.log_refill", "function", 57, 57),
        ("MyApp.RateLimiter.limited", "macro", 59, 66),
        ("MyApp.Describable", "protocol", 69, 72),
        ("MyApp.Describable.describe", "function", 70, 71),
    ],
    "go/cache.go": [
        ("entry", "struct", 12, 15),
        ("Cache", "struct", 17, 23),
        ("Store", "interface", 25, 29),
        ("New", "function", 31, 37),
        ("Cache.Get", "method", 39, 49),
        ("Cache.Set", "method", 51, 56),
        ("Cache.Sweep", "method", 58, 70),
    ],
    "groovy/BuildHelper.groovy": [
        ("ArtifactPublisher", "class", 7, 49),
        ("ArtifactPublisher.ArtifactPublisher", "method", 16, 19),
        ("ArtifactPublisher.collect", "method", 20, 29),
        ("ArtifactPublisher.publish", "method", 30, 44),
        ("ArtifactPublisher.upload", "method", 45, 47),
        ("Notifier", "interface", 50, 53),
        ("buildNumber", "function", 54, 57),
    ],
    "java/OrderService.java": [
        ("OrderService", "class", 8, 66),
        ("OrderService.OrderService", "method", 21, 23),
        ("OrderService.find", "method", 25, 29),
        ("OrderService.place", "method", 31, 48),
        ("OrderService.sortedBy", "method", 50, 52),
        ("OrderService.Status", "enum", 54, 63),
        ("OrderService.Status.isFinal", "method", 60, 62),
        ("OrderService.Summary", "record", 65, 65),
        ("OrderLookup", "interface", 68, 70),
        ("OrderLookup.find", "method", 69, 69),
    ],
    "javascript/cart.js": [
        ("Cart", "class", 8, 50),
        ("Cart.constructor", "method", 14, 17),
        ("Cart.add", "method", 19, 26),
        ("Cart.remove", "method", 28, 33),
        ("Cart.total", "method", 35, 41),
        ("Cart.fromJSON", "method", 43, 49),
        ("summary", "function", 52, 56),
        ("debounce", "function", 58, 64),
        ("loadCart", "function", 66, 72),
    ],
    "kotlin/Inventory.kt": [
        ("Sku", "class", 7, 7),
        ("StockEvent", "interface", 9, 12),
        ("StockEvent.Received", "class", 10, 10),
        ("StockEvent.Shipped", "class", 11, 11),
        ("Inventory", "class", 14, 50),
        ("Inventory.receive", "method", 20, 26),
        ("Inventory.ship", "method", 28, 34),
        ("Inventory.lowStock", "method", 36, 37),
        ("Inventory.events", "method", 39, 43),
        ("Inventory.companion", "object", 45, 49),
        ("Inventory.companion.empty", "method", 48, 48),
        ("InventoryRegistry", "object", 52, 55),
        ("InventoryRegistry.register", "method", 54, 54),
        ("describe", "function", 57, 57),
        ("main", "function", 59, 63),
    ],
    "objc/NetworkClient.m": [
        ("NetworkClient", "interface", 12, 15),
        ("NetworkClient", "implementation", 17, 53),
        ("NetworkClient.initWithToken:", "method", 19, 26),
        ("NetworkClient.fetchPath:completion:", "method", 28, 43),
        ("NetworkClient.userAgent", "method", 45, 47),
        ("NetworkClient.cancelAll", "method", 49, 51),
        ("NCDescribeError", "function", 55, 57),
    ],
    "php/UserRepository.php": [
        ("UserFinder", "interface", 10, 13),
        ("UserFinder::find", "method", 12, 12),
        ("UserRepository", "class", 15, 56),
        ("UserRepository::__construct", "method", 23, 25),
        ("UserRepository::find", "method", 27, 35),
        ("UserRepository::store", "method", 37, 41),
        ("UserRepository::save", "method", 43, 50),
        ("UserRepository::table", "method", 52, 55),
        ("Timestamps", "trait", 58, 64),
        ("Timestamps::touch", "method", 60, 63),
        ("normalize_email", "function", 66, 69),
    ],
    "python/invoice.py": [
        ("LineItem", "class", 15, 21),
        ("Repository", "class", 24, 34),
        ("Repository.__init__", "method", 27, 28),
        ("Repository.add", "method", 30, 31),
        ("Repository.get", "method", 33, 34),
        ("Invoice", "class", 37, 77),
        ("Invoice.subtotal", "method", 49, 52),
        ("Invoice.tax", "method", 54, 56),
        ("Invoice.from_order", "method", 58, 65),
        ("Invoice.generate", "method", 67, 77),
        ("Invoice.generate.fmt", "function", 70, 71),
        ("send_all", "function", 80, 90),
    ],
    "racket/shapes.rkt": [
        ("circle", "struct", 11, 11),
        ("rect", "struct", 12, 12),
        ("shape?", "function", 14, 15),
        ("area", "function", 17, 22),
        ("scale", "function", 24, 27),
        ("largest", "function", 29, 33),
        ("with-unit-circle", "macro", 35, 36),
        ("test", "module", 38, 41),
    ],
    "ruby/subscription.rb": [
        ("Billing", "module", 6, 58),
        ("Billing::StateError", "class", 8, 8),
        ("Billing::Subscription", "class", 10, 53),
        ("Billing::Subscription#initialize", "method", 19, 23),
        ("Billing::Subscription#next_renewal", "method", 25, 30),
        ("Billing::Subscription#cancel!", "method", 32, 38),
        ("Billing::Subscription#<=>", "method", 40, 42),
        ("Billing::Subscription.trial", "method", 44, 46),
        ("Billing::Subscription#log_event", "method", 50, 52),
        ("Billing.monthly_total", "method", 55, 57),
    ],
    "rust/geometry.rs": [
        ("Point", "struct", 8, 13),
        ("Point", "impl", 15, 37),
        ("Point::new", "method", 16, 19),
        ("Point::distance", "method", 21, 26),
        ("Point::scale", "method", 28, 31),
        ("Point::rotate", "method", 33, 36),
        ("Point", "impl", 39, 43),
        ("Point::fmt", "method", 40, 42),
        ("Point", "impl", 45, 51),
        ("Point::Output", "type", 46, 46),
        ("Point::add", "method", 48, 50),
        ("Shape", "trait", 53, 58),
        ("Shape::area", "method", 54, 54),
        ("Shape::name", "method", 55, 57),
        ("Figure", "enum", 60, 63),
        ("point", "macro", 65, 69),
        ("convert", "module", 71, 77),
        ("convert::to_polar", "function", 74, 76),
        ("centroid", "function", 79, 85),
    ],
    "scala/Ledger.scala": [
        ("Entry", "class", 6, 7),
        ("LedgerError", "trait", 9, 9),
        ("Unbalanced", "object", 10, 10),
        ("UnknownAccount", "class", 11, 11),
        ("Ledger", "class", 13, 44),
        ("Ledger.post", "method", 20, 29),
        ("Ledger.balance", "method", 31, 33),
        ("Ledger.report", "method", 34, 40),
        ("Ledger.balances", "method", 42, 43),
        ("Ledger", "object", 46, 53),
        ("Ledger.apply", "method", 47, 47),
        ("Ledger.parse", "method", 49, 52),
        ("Auditable", "trait", 55, 57),
        ("Auditable.audit", "method", 56, 56),
    ],
    "scheme/queue.scm": [
        ("queue", "record", 3, 7),
        ("enqueue", "function", 11, 13),
        ("normalize", "function", 15, 18),
        ("dequeue", "function", 20, 26),
        ("queue->list", "function", 28, 29),
        ("list->queue", "function", 31, 35),
        ("with-queue", "macro", 37, 40),
        ("queue-size", "function", 42, 44),
    ],
    "swift/WeatherStore.swift": [
        ("Forecast", "struct", 4, 10),
        ("WeatherError", "enum", 12, 15),
        ("WeatherService", "protocol", 17, 19),
        ("WeatherService.forecast", "method", 18, 18),
        ("WeatherStore", "class", 21, 50),
        ("WeatherStore.init", "method", 28, 30),
        ("WeatherStore.refresh", "method", 32, 40),
        ("WeatherStore.warmest", "method", 42, 44),
        ("WeatherStore.clear", "method", 46, 49),
        ("Forecast", "extension", 52, 60),
        ("Forecast.describe", "method", 55, 59),
        ("averageHigh", "function", 62, 65),
    ],
    "tsx/TodoList.tsx": [
        ("Todo", "interface", 3, 7),
        ("Filter", "type", 9, 9),
        ("TodoListProps", "interface", 11, 14),
        ("TodoList", "function", 16, 47),
        ("FilterBar", "function", 49, 57),
        ("TodoErrorBoundary", "class", 59, 73),
        ("TodoErrorBoundary.getDerivedStateFromError", "method", 62, 64),
        ("TodoErrorBoundary.componentDidCatch", "method", 66, 68),
        ("TodoErrorBoundary.render", "method", 70, 72),
    ],
    "typescript/repository.ts": [
        ("UserId", "type", 4, 4),
        ("User", "interface", 6, 11),
        ("Role", "enum", 13, 17),
        ("Repository", "class", 19, 55),
        ("Repository.constructor", "method", 27, 27),
        ("Repository.get", "method", 29, 40),
        ("Repository.put", "method", 42, 45),
        ("Repository.save", "method", 47, 50),
        ("Repository.clear", "method", 52, 54),
        ("Permissions", "namespace", 57, 65),
        ("Permissions.canEdit", "function", 58, 60),
        ("Permissions.canDelete", "function", 62, 64),
        ("byEmail", "function", 67, 68),
        ("Deprecated", "function", 70, 78),
    ],
}  # fmt: skip


def flatten(definitions: list[Definition]) -> list[Row]:
    rows: list[Row] = []
    for d in definitions:
        rows.append((d.name, d.kind, d.start_line, d.end_line))
        rows.extend(flatten(d.children))
    return rows


def test_every_fixture_is_listed() -> None:
    files = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.is_file()}
    assert files == set(DEFINITIONS)


@pytest.mark.parametrize("fixture", sorted(DEFINITIONS))
def test_definitions(fixture: str) -> None:
    data = (FIXTURES / fixture).read_bytes()
    language = detect_language(fixture, data)
    assert language is not None
    source = decode(data).encode()
    found = flatten(extract(parser_for(language).parse(source), language, source))
    assert found == DEFINITIONS[fixture]
