"""Which receiver fields and globals a code object reads (``contract._state_reads``), from
its bytecode, on every supported Python."""

from __future__ import annotations

from diffgenome.recording.collect.contract import CodeInfo, _argument_names, _state_reads

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

    def count(self) -> None:
        self.seen += 1

    def mark(self) -> None:
        self.done = True

    def __deepcopy__(self, memo: dict[int, object]) -> Pricing:
        return self

    def copy_other(self, other: Pricing) -> int:
        other.seen += 1
        return self.tax

    def shared(self, amounts: list[int]) -> int:
        # The generator expression reads ``self``: it is a cell here, read by LOAD_DEREF.
        return sum(a * self.tax for a in amounts) + self.seen


def test_a_field_read_after_a_fused_pair_of_loads_is_seen() -> None:
    assert _state_reads(Pricing.fused.__code__, "self") == (("tax",), ())


def test_plain_reads_and_globals() -> None:
    assert _state_reads(Pricing.plain.__code__, "self") == (("tax",), ("RATE",))


def test_a_pair_without_the_receiver_on_top_is_no_read() -> None:
    assert _state_reads(Pricing.other_pair.__code__, "self") == (("tax",), ())
    assert _state_reads(Pricing.fused.__code__, None) == ((), ())


def test_a_field_changed_in_place_is_read_state() -> None:
    """``self.seen += 1`` copies the receiver, then reads ``seen`` (values revision 4)."""
    assert _state_reads(Pricing.count.__code__, "self") == (("seen",), ())


def test_a_field_only_assigned_and_another_objects_field_are_not() -> None:
    assert _state_reads(Pricing.mark.__code__, "self") == ((), ())
    assert _state_reads(Pricing.copy_other.__code__, "self") == (("tax",), ())


def test_the_memo_of_deepcopy_is_no_argument() -> None:
    """``copy.deepcopy``'s memo is keyed by id(): a digest of it is noise (values revision 4)."""
    assert _argument_names(Pricing.__deepcopy__.__code__) == ((), "self")
    assert _argument_names(Pricing.copy_other.__code__) == (("other",), "self")


def test_a_hash_method_records_no_receiver_state() -> None:
    """cachetools' ``_HashedTuple.__hash__`` caches its hash on the instance: the bucket of
    that int moves with addresses, as the hash it returns does (values revision 5)."""

    class Hashed(tuple):  # type: ignore[type-arg]
        _cached = None

        def __hash__(self) -> int:
            value = self._cached
            if value is None:
                self._cached = value = tuple.__hash__(self)
            return value

        def size(self) -> int:
            return len(self) + (self._cached or 0)

    hashing = CodeInfo(
        Hashed.__hash__.__code__, "py:m.Hashed.__hash__", "repo", "function", 1, "/m.py", None
    )
    assert hashing.salted_results
    assert hashing.self_attrs == ()
    sizing = CodeInfo(
        Hashed.size.__code__, "py:m.Hashed.size", "repo", "function", 1, "/m.py", None
    )
    assert sizing.self_attrs == ("_cached",)


def test_a_receiver_a_generator_expression_shares_is_still_read() -> None:
    """A method whose ``self`` a nested scope reads holds it in a cell (``LOAD_DEREF``): its
    own reads of fields were not seen, and such a method recorded no state (values revision
    7). The generator expression's own read is its code object's, not the method's."""
    assert "self" in Pricing.shared.__code__.co_cellvars
    assert _state_reads(Pricing.shared.__code__, "self") == (("seen",), ("sum",))
