"""The secret rules of the text a genome keeps in clear (``recording/collect/redact.py``):
what they mask, what they leave for people to read, and that a mark is a keyed digest."""

from __future__ import annotations

import re

import pytest

from diffgenome.recording.collect.redact import MARK, Redactor, secret_environment_values
from diffgenome.recording.collect.values import Digester

KEY = b"k" * 32


def _redactor(environ: dict[str, str] | None = None, key: bytes = KEY) -> Redactor:
    return Redactor(Digester(key), environ or {})


# Fixed strings (drawn once): the rules are heuristics, measured on random draws in
# docs/protocol.md; a test of them must not depend on a draw.
@pytest.mark.parametrize(
    "secret",
    [
        "tok_8f885559d76fbd9cc9fb9459a063a18c",
        "sk-live-ZKRrWBKgRrOJ5hNF7ti1t4tq",
        "sk_test_247a30d955",
        "ghp_" + "aB3" * 12,
        "github_pat_" + "x1Y" * 10,
        "xoxb-1234-abcd-efgh",
        "AKIA" + "ABCDEFGH12345678",
        "AIza" + "Ab1-" * 9,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
        "247a30d955faeaa203ff",
        "ZKRrWBKgRrOJ5hNF7ti1t4tq",
        "IZsNbNPnqdzyPifDaHpbekMHzPwIezbp",
        "7123456789012345678901234",
        "123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_token_like_text_is_masked(secret: str) -> None:
    shown = _redactor().text(f"call with {secret} now")
    assert secret not in shown
    assert re.fullmatch(r"call with <secret:[0-9a-f]{12}> now", shown), shown


@pytest.mark.parametrize(
    ("text", "kept", "hidden"),
    [
        ("password=hunter2 and more", "password=", "hunter2"),
        ('{"api_key": "abc123"}', '"api_key": "', "abc123"),
        ("Authorization: Bearer abcdefghijkl", "Authorization: ", "abcdefghijkl"),
        ("https://bob:s3cr3t@db.example.com/x", "https://bob:", "s3cr3t"),
        ("(amount, api_key='sk_live_0123456789')", "(amount, api_key='", "0123456789"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "", "MIIE"),
    ],
)
def test_values_named_as_secrets_are_masked(text: str, kept: str, hidden: str) -> None:
    shown = _redactor().text(text)
    assert hidden not in shown and kept in shown and MARK.search(shown), shown


@pytest.mark.parametrize(
    "text",
    [
        "a 'v' prefix is deprecated",
        "unclosed <socket.socket fd=N, family=N, type=N, proto=N, laddr=('N.N.N.N', N)>",
        "tests/test_pricing.py::test_discount_tiers[500]",
        "test_discount_tiers_for_orders_over_100_and_under_500",
        "TestDiscountTiersForLargeOrders",
        "HTTPSConnectionPoolXMLRPC",
        "call:untraced-subprocess:python3.12",
        "foreign-module:pkg=<home>/.venv/lib/python3.12/site-packages/pkg/__init__.py",
        "api.stripe.com:443",
        "127.0.0.1:8080",
        "[::1]:443",
        "cpython-312-x86_64-linux-gnu",
        "coroutine 'fetch' was never awaited",
        "py:shop.pricing.discount/if[968bfef3f5]",
        "<root>/tests/test_parse.py",
        "2026-12-01T18:45:41Z",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert _redactor().text(text) == text


def test_secrets_the_environment_names_are_masked_wherever_they_appear() -> None:
    environ = {
        "DB_PASSWORD": "correct horse battery",
        "API_TOKEN": "opensesame",
        "SESSION_ENGINE": "database",  # a word: masking it would mask the word
        "PWD": "/work/project",  # a folder, named PWD
        "AUTH_MODE": "on",  # too short to mask anywhere
        "HOME": "/root",
    }
    assert secret_environment_values(environ) == {"correct horse battery", "opensesame"}
    redactor = _redactor(environ)
    shown = redactor.text("connect with correct horse battery to database at /work/project")
    assert shown.startswith("connect with <secret:") and "database at /work/project" in shown
    # A value a fixture sets later is taken when the environment is noted again.
    assert redactor.text("xyzzy plugh") == "xyzzy plugh"
    redactor.note_environment({"SERVICE_SECRET": "xyzzy plugh"})
    assert redactor.text("xyzzy plugh").startswith("<secret:")


def test_a_mark_is_a_keyed_digest_of_the_part_it_hides() -> None:
    token = "tok_8f885559d76fbd9cc9fb9459a063a18c"
    one, again, other_key = _redactor(), _redactor(), _redactor(key=b"q" * 32)
    assert one.text(token) == again.text(token)  # the same key: equal ids still pair
    assert one.text(token) != other_key.text(token)  # nothing to look up without the key
    assert one.text(token) != one.text(token[:-1] + "x")  # other text, other mark
    assert one.text(f"a {token} b {token}").count(one.text(token)) == 2


def test_test_ids_keep_their_path_class_and_function() -> None:
    token = "tok_8f885559d76fbd9cc9fb9459a063a18c"
    redactor = _redactor()
    mark = redactor.text(token)
    assert redactor.test_id(f"tests/t.py::TestA::test_b[{token}]") == (
        f"tests/t.py::TestA::test_b[{mark}]"
    )
    # A run of token characters is masked whole (``1-tok_…`` is one run).
    assert re.fullmatch(
        r"tests/t.py::test_b\[<secret:\w+>\]", redactor.test_id(f"tests/t.py::test_b[1-{token}]")
    )
    assert redactor.test_id("tests/t.py::test_b[500-small]") == "tests/t.py::test_b[500-small]"
    # Digits stay in ids (big integers, public test card numbers); elsewhere they are masked.
    big = "tests/t.py::test_bits[9223372036854775807-8-False]"
    assert redactor.test_id(big) == big
    assert redactor.text("card 4111111111111111").startswith("card <secret:")
    sub = redactor.test_id(f"tests/t.py::test_s [for {token}] (token='abc')")
    assert sub.startswith(f"tests/t.py::test_s [for {mark}] (token='<secret:"), sub
    assert redactor.test_id(f"<import>{token}") == f"<import>{token}"  # not a test id
    # A class or function named like a token is code, not a value.
    assert redactor.test_id(f"tests/t.py::test_{token}") == f"tests/t.py::test_{token}"
    # A rule that reads to the end of the text (a PEM key cut by pytest) keeps the id's
    # closing bracket (#45.6).
    pem = "tests/t.py::test_k[-----BEGIN RSA PRIVATE KEY-----MIIEabc]"
    assert re.fullmatch(r"tests/t.py::test_k\[<secret:\w+>\]", redactor.test_id(pem))


def test_long_text_is_read_in_bounded_time_and_the_rest_marked() -> None:
    redactor = _redactor()
    text = "word " * 2000 + "tail"
    shown = redactor.text(text)
    assert shown.startswith("word word") and shown.endswith(">") and "tail" not in shown


def test_never_raises_and_marks_what_it_cannot_read() -> None:
    redactor = _redactor()
    assert redactor.text("\udcff bad surrogate tok_" + "ab12" * 8).startswith("\udcff bad")
