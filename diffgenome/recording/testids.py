"""The id each test is recorded under: items that share a node id, and subtests labelled
alike, numbered apart so that each is a test of its own (docs/recording.md).
"""

from __future__ import annotations

import pytest

from diffgenome.protocol.selection import shared_id

#: An item's recorded id and how many collected items carry its node id, kept on items that
#: share their node id with others (``name_items``).
SHARED = pytest.StashKey[tuple[str, int]]()


def name_items(collected: list[tuple[pytest.Item, str]]) -> None:
    """Items that share a node id (a custom collector yielding cases of one name:
    docopt-ng's ``testcases.docopt``) are tests apart, each recorded: the first keeps
    the node id, the later ones in collection order are ``<node id>#1``, ``#2``... (an
    index that another collected item's own id already is, is passed over). Counted over
    every collected item, before ``-k``, ``--deselect`` or a plugin reorders them, so
    that a case keeps its id whichever of them a session runs, and every xdist worker
    (each collects them all) gives the same. ``collected``: the items in collection order,
    each with its node id as recorded; each item that shares it gets its id in its stash."""
    sizes: dict[str, int] = {}
    for _, node in collected:
        sizes[node] = sizes.get(node, 0) + 1
    if len(sizes) == len(collected):
        return  # no node id is shared: the common case
    given = set(sizes)
    following: dict[str, int] = {}
    for item, node in collected:
        size = sizes[node]
        if size == 1:
            continue
        index = following.get(node)
        if index is None:
            test_id, index = node, 1
        else:
            while shared_id(node, index) in given:
                index += 1
            test_id = shared_id(node, index)
            given.add(test_id)
            index += 1
        following[node] = index
        item.stash[SHARED] = (test_id, size)


def subtest_id(given: dict[str, int], subtest: str) -> str:
    """Subtests of one test labelled alike (``subtests.test(msg="row")`` in a loop)
    are recorded apart too: the later ones in the order they ran, ``<id> [row]#1``...
    ``given``: the ids given in the running test, and the next index after each."""
    index = given.get(subtest)
    if index is None:
        given[subtest] = 1
        return subtest
    while shared_id(subtest, index) in given:
        index += 1
    given[subtest] = index + 1
    test_id = shared_id(subtest, index)
    given.setdefault(test_id, 1)
    return test_id
