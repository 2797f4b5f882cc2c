"""The effects' hooks run inside the program's own threads: they must not let other threads run.

google-auth's ``test_nonblocking_refresh_stale_credentials`` starts a refresh thread and looks
at its result at once; its thread raised a deprecation warning, which the recorder digested
there, and an HMAC lets other threads run (OpenSSL is called without the GIL): the test failed
under ``--genome`` on every run. Whether another thread gets to run at such a moment depends
on the machine, so what is checked here is the cause: no digest is taken in the thread that
warns or logs, only when the phase ends, and the digests are the same as before.
"""

from __future__ import annotations

import logging
import threading
import warnings

from diffgenome.recording.collect.scope import Scope
from diffgenome.recording.collect.values import Digester
from diffgenome.recording.effects import Effects


class ThreadsThatDigest(Digester):
    """A real digester that notes which thread asked for each digest."""

    __slots__ = ("threads",)

    def __init__(self, key: bytes) -> None:
        super().__init__(key)
        self.threads: list[int] = []

    def digest(self, canonical: bytes) -> str:
        self.threads.append(threading.get_ident())
        return super().digest(canonical)


def test_a_thread_that_warns_and_logs_takes_no_digest() -> None:
    digester = ThreadsThatDigest(b"k" * 32)
    effects = Effects(digester, lambda text: text, Scope("/nonexistent", [], []))
    effects.install()
    logger = logging.getLogger("diffgenome-test-effects-threads")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            effects.begin_phase("call")

            def work() -> None:
                warnings.warn("old api", UserWarning, stacklevel=1)
                logger.warning("refreshed %s", 1)

            thread = threading.Thread(target=work)
            thread.start()
            thread.join()
            worker = thread.ident
            assert digester.threads == []  # nothing digested while the thread ran
            effects.end_phase()
    finally:
        effects.uninstall()
    entries, _ = effects.take()
    kinds = sorted(str(entry["type"]) for entry in entries)
    assert kinds == ["log", "warning"], entries
    assert digester.threads and worker not in digester.threads
    assert set(digester.threads) == {threading.get_ident()}
    # The digests are those of the same text and arguments, digested directly.
    plain = Digester(b"k" * 32)
    [log] = [entry for entry in entries if entry["type"] == "log"]
    assert log["args_digest"] == plain.digest_value((1,))
