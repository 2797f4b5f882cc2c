"""The one line a recording session ends with: what was recorded, where, how much of it
cannot be compared and why.
"""

from __future__ import annotations

from diffgenome.protocol.vocab import REASON_NOT_STORABLE


def summary_line(
    run_id: str,
    store_path: str,
    tally: tuple[int, int, str | None, int, int, int],
    incomplete: list[str],
) -> str:
    """The line (without the notices' prefix) from the store's ``tally`` of the run:
    tests, unverified ones, the commonest reason and its count, records stored without their
    phases, tests that share a node id; ``incomplete``: why the run is incomplete."""
    tests, unverified, top, top_count, unstorable, shared = tally
    line = f"run {run_id} recorded {tests} test{'s' if tests != 1 else ''} into {store_path}; "
    if not tests:
        # pytest collected nothing, or everything was deselected: a run of no test is
        # said as such (its <import> record is no test), and no diff reuses it.
        line = f"run {run_id} recorded no tests into {store_path}: the selection is empty"
    elif unverified:
        line += f"{unverified} unverified (most: {top}, {top_count})"
    else:
        line += "none unverified"
    if unstorable:
        line += (
            f"; {unstorable} test record{'s' if unstorable != 1 else ''} held a value the "
            f"store cannot encode and {'were' if unstorable != 1 else 'was'} stored without "
            f"{'their' if unstorable != 1 else 'its'} phases ({REASON_NOT_STORABLE})"
        )
    if shared:
        line += (
            f"; {shared} test{'s' if shared != 1 else ''} share a node id with others, each "
            "recorded apart (<node id>#1, #2... in collection order)"
        )
    if incomplete:
        more = f", and {len(incomplete) - 1} more" if len(incomplete) > 1 else ""
        line += f"; the run is incomplete ({incomplete[0]}{more})"
    return line
