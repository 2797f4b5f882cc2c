"""Which receiver fields and globals a code object reads (``contract._state_reads``), from
its bytecode, on every supported Python."""

from __future__ import annotations

from diffgenome.recording.collect.contract import _state_reads

RATE = 3


class Pricing:
    tax = 20

    def fused(self, amount: int) -> int:
        # 3.13 compiles ``amount * self.tax`` to LOAD_FAST_LOAD_FAST (amount, self): the
        # read of ``self.tax`` was missed there, and an inlined helper's state went unseen.
        return amount * self.tax // 100

    def plain(self) -> int:
        return self.tax * RATE

    def other_pair(self, a: int, b: int) -> int:
        return a * b + self.tax


def test_a_field_read_after_a_fused_pair_of_loads_is_seen() -> None:
    assert _state_reads(Pricing.fused.__code__, "self") == (("tax",), ())


def test_plain_reads_and_globals() -> None:
    assert _state_reads(Pricing.plain.__code__, "self") == (("tax",), ("RATE",))


def test_a_pair_without_the_receiver_on_top_is_no_read() -> None:
    assert _state_reads(Pricing.other_pair.__code__, "self") == (("tax",), ())
    assert _state_reads(Pricing.fused.__code__, None) == ((), ())
