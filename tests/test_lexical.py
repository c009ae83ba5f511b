"""Identifier-aware terms: the same splitting on the index and the query side, function words
dropped from queries, crude stems as prefixes."""

from __future__ import annotations

from indexer import lexical


def test_identifier_spellings_share_their_terms() -> None:
    # getUserById, get_user_by_id, get-user-by-id and the words all yield get/user/id.
    spellings = ["getUserById", "get_user_by_id", "get-user-by-id", "GetUserByID"]
    for spelling in spellings:
        assert {"get", "user", "by", "id", "getuserbyid"} <= set(lexical.terms(spelling))
    assert lexical.query_terms("get user by id") == ["get", "user", "id"]


def test_whole_identifier_is_kept_next_to_its_parts() -> None:
    assert lexical.terms("parseHTTPResponse2") == [
        "parse",
        "http",
        "response",
        "2",
        "parsehttpresponse2",
    ]
    assert lexical.terms("x") == ["x"]


def test_query_drops_function_words_unless_nothing_else_is_left() -> None:
    assert lexical.query_terms("Return the number of items in the queue") == [
        "return",
        "number",
        "items",
        "queue",
    ]
    assert lexical.query_terms("is it") == ["is", "it"]
    assert lexical.query_terms("the of", stopwords=False) == ["the", "of"]


def test_stems_are_prefixes_only_for_real_words() -> None:
    assert lexical.stem("parsed") == "pars"
    assert lexical.stem("entries") == "entr"
    assert lexical.stem("items") == "item"
    assert lexical.stem("is") == "is"  # too short to lose a suffix
    assert lexical.stem("utf8s") == "utf8s"  # not alphabetic: left alone
    assert lexical.tsquery_term("items", prefix=True) == "'item':*"
    assert lexical.tsquery_term("return", prefix=True) == "'return'"  # no suffix: exact
    assert lexical.tsquery_term("id", prefix=True) == "'id'"
    assert lexical.tsquery_term("items") == "'items'"


def test_tsquery_text_quotes_every_term() -> None:
    assert lexical.tsquery_any(["it's", "a\\b"]) == "'it''s' | 'a\\\\b'"


def test_adjacent_query_words_also_match_joined_as_a_compound_name() -> None:
    # "retry delay" meets retryDelay / retry_delay, indexed under its whole name `retrydelay`.
    assert lexical.query_terms("where is the retry delay computed", compounds=2) == [
        "retry",
        "delay",
        "computed",
        "retrydelay",
        "delaycomputed",
    ]
    assert set(lexical.terms("retryDelay")) & set(
        lexical.query_terms("retry delay", compounds=2)
    ) == {"retry", "delay", "retrydelay"}
    # A run may hold a function word inside, never at either end: "get user by id" reaches
    # getUserById's whole name with runs of four.
    joined = lexical.query_terms("get user by id", compounds=4)
    assert "getuserbyid" in joined and "userby" not in joined and "byid" not in joined
    # A name of several parts already brings its whole name, and breaks a run.
    assert lexical.query_terms("parseHTTP response", compounds=3) == [
        "parse",
        "http",
        "parsehttp",
        "response",
    ]
    assert lexical.query_terms("retry delay") == ["retry", "delay"]  # off by default


def test_compounds_never_push_the_terms_past_the_cap() -> None:
    many = [f"z{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
    words = lexical.query_terms(" ".join(many), compounds=3)
    assert words == many[: lexical.MAX_QUERY_TERMS]
    few = lexical.query_terms(" ".join(many[:20]), compounds=3)
    assert few[:20] == many[:20] and len(few) == lexical.MAX_QUERY_TERMS
