"""What a test warned, as the recorder keeps it (``recording/warned.py``): the message as a
keyed digest only, a masked and cut preview only when asked for."""

from __future__ import annotations

import warnings

from diffgenome.recording.collect.redact import Redactor
from diffgenome.recording.collect.values import Digester
from diffgenome.recording.warned import MAX_TEXT, WarningsSeen

DIGESTER = Digester(b"k" * 32)
TOKEN = "tok_8f885559d76fbd9cc9fb9459a063a18c"


def _seen(*messages: tuple[type[Warning], str], preview: bool = False) -> list[dict[str, object]]:
    seen = WarningsSeen(DIGESTER, Redactor(DIGESTER, {}).text, preview)
    for category, text in messages:
        seen.add(warnings.WarningMessage(category(text), category, "/x/pkg/m.py", 3))
    return seen.take()


def test_the_message_is_a_digest_and_never_text() -> None:
    [warned] = _seen((UserWarning, f"token is {TOKEN}"), (UserWarning, f"token is {TOKEN}"))
    assert set(warned) == {"category", "origin", "message_digest", "count"}
    assert warned["count"] == 2 and TOKEN not in repr(warned)
    [other] = _seen((UserWarning, f"token was {TOKEN}"))
    assert other["message_digest"] != warned["message_digest"]


def test_a_preview_is_masked_then_cut() -> None:
    [warned] = _seen((UserWarning, f"token is {TOKEN}"), preview=True)
    assert warned["message"].startswith("token is <secret:") and warned["message"].endswith(">")
    long = "x " * 300 + TOKEN
    [cut] = _seen((UserWarning, long), preview=True)
    assert len(cut["message"]) == MAX_TEXT + 1 and cut["message"].endswith("\u2026")
    # A secret that straddles the end of what is read (800 characters) is dropped, never
    # shown in part: here a masked key before it leaves room to show what follows.
    key = "-----BEGIN PRIVATE KEY-----" + "A" * 700 + "-----END PRIVATE KEY-----"
    text = key + " then " + "z" * (790 - len(key) - 7) + " " + TOKEN
    assert text.index(TOKEN) < 800 < text.index(TOKEN) + len(TOKEN)
    [read] = _seen((UserWarning, text), preview=True)
    shown = read["message"]
    assert shown.startswith("<secret:") and " then " in shown and shown.endswith("\u2026")
    assert "tok_" not in shown and "AAAA" not in shown, shown


def test_resource_warnings_lose_their_numbers_and_are_marked_finalizing() -> None:
    one = _seen((ResourceWarning, "unclosed <socket fd=7, laddr=('127.0.0.1', 40123)>"))
    two = _seen((ResourceWarning, "unclosed <socket fd=9, laddr=('127.0.0.1', 51000)>"))
    assert one == two and one[0]["finalizing"] is True
    [never] = _seen((RuntimeWarning, "coroutine 'f' was never awaited"))
    assert never["finalizing"] is True
    [plain] = _seen((RuntimeWarning, "overflow"))
    assert "finalizing" not in plain
