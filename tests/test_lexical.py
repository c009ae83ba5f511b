"""Identifier-aware terms: the same splitting on the index and the query side, function words
dropped from queries."""

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


def test_a_function_word_written_as_a_name_is_kept() -> None:
    # Capitalised inside a sentence, "Either" is a type and "After" part of a header's name.
    assert lexical.query_terms("accepts one of two types, like an Either") == [
        "accepts",
        "one",
        "two",
        "types",
        "like",
        "either",
    ]
    assert "after" in lexical.query_terms("where is the Retry-After header set")
    assert lexical.named_words("columns declared NOT NULL") == {"not"}
    # A sentence's first word, a single letter and lowercase function words stay prose.
    assert lexical.named_words("Either way. Where do I stop? After that") == frozenset()
    assert lexical.query_terms("either way") == ["way"]


def test_a_query_term_is_its_exact_lexeme() -> None:
    # No stemming: "items" matches the lexeme items only.
    assert lexical.tsquery_term("items") == "'items'"


def test_tsquery_text_quotes_every_term() -> None:
    assert lexical.tsquery_any(["it's", "a\\b"]) == "'it''s' | 'a\\\\b'"


def test_query_terms_are_capped() -> None:
    # A pasted paragraph cannot make the keyword side rank on hundreds of terms.
    many = [f"z{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
    assert lexical.query_terms(" ".join(many)) == many[: lexical.MAX_QUERY_TERMS]


def test_a_word_s_inflections_are_the_words_it_may_come_from_or_its_plural() -> None:
    assert lexical.inflections("views") == ("views", "view")
    assert lexical.inflections("view") == ("view", "views")
    assert lexical.inflections("process") == ("process", "processes")
    assert lexical.inflections("policy") == ("policy", "policies")
    assert {"delete"} <= set(lexical.inflections("deleted"))
    assert {"stop"} <= set(lexical.inflections("stopped"))
    assert {"load"} <= set(lexical.inflections("loading"))
    assert {"dependency"} <= set(lexical.inflections("dependencies"))
    assert {"class"} <= set(lexical.inflections("classes"))
    # Never a derived word; short or non-alphabetic words stand alone.
    assert "parser" not in lexical.inflections("parsed")
    assert lexical.inflections("map") == ("map",)
    assert lexical.inflections("utf8") == ("utf8",)
