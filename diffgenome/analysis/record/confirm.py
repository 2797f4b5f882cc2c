"""Confirmation: the tests that differ recorded again, up to twice on each side, in new
worktrees.

What differs between two recordings of one commit is noise, not change; the differ masks it
as unstable. The cost grows with the number of differing tests, not with the suite: each
confirming recording is narrowed to them (``--genome-only``), base and head are recorded
side by side, and the second round is made only where the first did not show every test
exactly as the first recordings did (the caller's ``settled``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from diffgenome.analysis.record import documents
from diffgenome.analysis.record.process import interrupt_children, sigint_ignored
from diffgenome.analysis.record.runner import Recordings
from diffgenome.analysis.record.sides import Side, side_subject
from diffgenome.analysis.record.worktree import Workspace
from diffgenome.protocol.runs import ORIGIN_CONFIRMATION
from diffgenome.protocol.selection import (
    ALL_CASES,
    node_id,
    path_words,
    pytest_node_id,
)
from diffgenome.protocol.vocab import IMPORT_TEST_ID

#: Recordings of each side's differing tests that confirmation compares with each other.
CONFIRMATIONS = 2

#: Whether the first round's recordings of base and head leave nothing for a second round:
#: they show every test as the first recordings of their sides did.
Settled = Callable[[dict[str, Any], dict[str, Any]], bool]

#: One confirming recording planned for a side: what it is, its tree, arguments, subject.
_Job = tuple[str, str, list[str], str]


def confirm(
    recordings: Recordings,
    notes: list[str],
    base: Side,
    head: Side,
    test_ids: Sequence[str],
    base_ids: Sequence[str] = (),
    *,
    one_place: bool = False,
    settled: Settled | None = None,
    in_context: frozenset[str] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Record ``test_ids`` again, twice on each side, in new worktrees: what differs
    between those two recordings of one commit is noise, not change. Sides that cannot
    be recorded again (a run, a file) give nothing, and a note says so. ``base_ids``:
    the same tests by their ids in base, where a test was paired under a new id.

    ``settled``: asked after the first round with its base and head recordings; where it
    answers yes, the second round is not made (one recording more on each side).

    ``one_place``: every confirming recording runs at one path, one after the other, so
    that the i-th recordings of base and head run in one environment byte for byte (the
    folder is part of it: ``PWD``, paths under the tree). The diff asks for it where its
    first recordings ran in different environments (a user's ``pytest --genome`` run
    reused beside a side it recorded): the confirming pairs are then its only evidence
    of what the code did, and they must differ by nothing but the code.

    ``in_context``: once on each side, not narrowed: every test the first recordings ran,
    but for those ids, which head's first recording carried over (``--selective``), so
    that the tests run after the same tests as the first time. Asked for the tests whose
    change the narrowed recordings did not show on either side, alike on both: a test that
    reads what another file's test left (a registry) fails alone on both sides."""
    repo = recordings.repo
    prefix = f"{repo.prefix}/" if repo and repo.prefix else ""
    node_ids = _node_ids(prefix, test_ids)
    base_node_ids = _node_ids(prefix, base_ids) if base_ids else node_ids
    if not node_ids:
        return [], []
    store, progress = recordings.store, recordings.progress
    workspace = Workspace(repo, store.path)
    try:
        sides = (
            (base, base_ids or test_ids, base_node_ids),
            (head, test_ids, node_ids),
        )
        trees: list[Callable[[str], str] | None] = []
        selections: list[tuple[str, list[str], str]] = []
        for which, (side, ids, named) in zip(("base", "head"), sides, strict=True):
            if in_context is not None:
                selection = [*recordings.selection(workspace), *_carry(workspace, in_context)]
                subject = f"{side_subject(which, side.spec, side.sha)} again, whole"
            else:
                user, only = _only(workspace, ids, named, recordings.pytest_args, whole=one_place)
                selection = [*recordings.selection(workspace, user), *only]
                subject = f"{side_subject(which, side.spec, side.sha)} again"
            selections.append((f"{side.spec} (confirming)", selection, subject))
            if side.kind == "revision" and side.sha is not None:
                trees.append(functools.partial(recordings.checkouts.checkout, workspace, side.sha))
            elif side.kind == "worktree" and repo is not None:
                trees.append(functools.partial(recordings.checkouts.worktree_copy, workspace))
            else:
                notes.append(
                    f"{side.spec} cannot be recorded again: its differences are not confirmed"
                )
                trees.append(None)
        out: list[list[dict[str, Any]]] = [[], []]
        rounds = 1 if in_context is not None else CONFIRMATIONS

        def enough(n: int) -> bool:
            return (
                n == 1
                and settled is not None
                and bool(out[0])
                and bool(out[1])
                and settled(out[0][0], out[1][0])
            )

        if one_place:
            for n in range(1, rounds + 1):
                for index, make in enumerate(trees):
                    if make is None:
                        continue
                    spec, selection, subject = selections[index]
                    with progress.step("checking out", "checked out", subject):
                        tree = make(_ONE_PLACE)
                    job = (spec, tree, selection, subject)
                    try:
                        for _, run_id in _record_at_once(recordings, workspace, [job], n, rounds):
                            out[index].append(
                                documents.stored(store.handle, run_id, progress, None)
                            )
                    finally:
                        workspace.remove_worktree(tree)
                if enough(n):
                    break
            return out[0], out[1]
        plan: list[_Job | None] = []
        for which, side, make, (spec, selection, subject) in zip(
            ("base", "head"), (base, head), trees, selections, strict=True
        ):
            if make is None:
                plan.append(None)
                continue
            with progress.step("checking out", "checked out", subject):
                tail = "worktree" if side.kind == "worktree" else str(side.sha)[:12]
                tree = make(f"confirm-{which}-{tail}")
            plan.append((spec, tree, selection, subject))
        for n in range(1, rounds + 1):
            for index, run_id in _record_at_once(recordings, workspace, plan, n, rounds):
                # Loaded within the confirmation's step: no step of its own.
                out[index].append(documents.stored(store.handle, run_id, progress, None))
            if enough(n):
                break
    finally:
        with sigint_ignored():
            workspace.close()
    return out[0], out[1]


#: The one folder of every confirming recording made ``one_place``.
_ONE_PLACE = "confirm"


def _record_at_once(
    recordings: Recordings,
    workspace: Workspace,
    plan: Sequence[_Job | None],
    n: int,
    rounds: int = CONFIRMATIONS,
) -> list[tuple[int, str]]:
    """One confirming recording of each planned side (the ``n``-th), the sides at the same
    time, each a step of its own while the other runs.

    Confirmation records tests that differed, and those are often slow by nature (a
    retry's back-off, a consumer thread's sleep): recording base and head side by side
    halves its wall time (google-api-core: 42 such tests, 7 s a recording) while each
    side's two recordings stay one after the other, so a clash between the sides
    (a fixed port, a shared file) happens alike in both rounds and masks nothing.
    """
    jobs = [(index, job) for index, job in enumerate(plan) if job is not None]
    if not jobs:
        return []

    def record(spec: str, tree: str, selection: list[str], subject: str) -> str:
        which = f"{subject} ({n} of {rounds})" if rounds > 1 else subject
        return recordings.record(
            spec, tree, workspace, selection, ORIGIN_CONFIRMATION, subject=which
        )

    if len(jobs) == 1:
        index, job = jobs[0]
        return [(index, record(*job))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [(index, pool.submit(record, *job)) for index, job in jobs]
        try:
            return [(index, future.result()) for index, future in futures]
        except BaseException:
            # Ctrl-C, or one side failed: the other side's pytest must not run on (its
            # thread would keep the pool, and the diff, waiting until it ends).
            interrupt_children()
            raise


def _carry(workspace: Workspace, carried: frozenset[str]) -> list[str]:
    """The arguments that leave out what head's first recording carried over."""
    if not carried:
        return []
    path = os.path.join(workspace.temp_path(), "carry-again.txt")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as out:
        out.writelines(f"{test_id}\n" for test_id in sorted(carried))
    return [f"--genome-carry={path}"]


def _only(
    workspace: Workspace,
    test_ids: Sequence[str],
    node_ids: Sequence[str],
    pytest_args: Sequence[str],
    *,
    whole: bool = False,
) -> tuple[list[str], list[str]]:
    """The user's arguments for a confirming recording of ``test_ids``, and the arguments
    that narrow it to them.

    ``--genome-only`` names them by recorded id, so that a path among the user's
    arguments (``-- tests``: sqlparse's 465 tests were all recorded again for 3 that
    differed) cannot widen the selection. The tests' files (``node_ids``,
    :func:`_node_ids`) are also given as arguments, which spares collecting the other
    files: where the user's arguments hold no word pytest reads as a path (an option's
    value, ``-o addopts=``, is none), and where every such word is a path each file lies
    under (``-- tests``), which the files then stand for. Not where a word may be a path
    or an unknown option's value (:func:`path_words`), not when ``whole``: then pytest
    collects what the first recordings collected, so that the confirming ``<import>``
    records are the whole import too, comparable with each other (confirmation in one
    place).

    The file is named by what it lists: the same tests confirmed on both sides give both
    sides the same command line, which tests can read (``sys.argv`` in a profile).
    """
    wanted = sorted({node_id(test_id) for test_id in test_ids if test_id != IMPORT_TEST_ID})
    text = "".join(f"{test_id}\n" for test_id in wanted)
    name = hashlib.sha256(text.encode()).hexdigest()[:12]
    listed = os.path.join(workspace.temp_path(), f"confirm-{name}.txt")
    with open(listed, "w", encoding="utf-8") as out:
        out.write(text)
    only = [f"--genome-only={listed}"]
    user = list(pytest_args)
    words = path_words(user)
    if whole or words is None or "--" in user:
        return user, only
    paths = [user[index] for index in words]
    if paths and not all(any(_under(node, path) for path in paths) for node in node_ids):
        return user, only
    return [arg for index, arg in enumerate(user) if index not in words], [*only, *node_ids]


def _under(node: str, path: str) -> bool:
    """Whether pytest node id ``node`` is among the tests a path argument names."""
    path = path.removeprefix("./").rstrip("/")
    return node == path or node.startswith((f"{path}/", f"{path}::"))


def _node_ids(prefix: str, test_ids: Sequence[str]) -> list[str]:
    """The files (pytest node ids of modules, relative to where pytest runs, ``prefix`` of
    the repository) of recorded test ids (relative to the repository root), sorted as pytest
    collects a folder. Files, not the tests' own node ids: pytest runs node ids in the order
    they are given, and a test that reads what an earlier test of its file left (a registry
    ``register`` fills, read by the next test) ran before it in the confirming recordings of
    both sides, failed on both, and its change read as ``unstable``. A file collects its
    tests in their order; ``--genome-only`` still narrows them to those confirmed."""
    out: dict[str, None] = {}
    for test_id in test_ids:
        if test_id == IMPORT_TEST_ID or not test_id.startswith(prefix):
            continue
        relative = test_id[len(prefix) :]
        if relative.endswith(ALL_CASES):  # every case of a function: the function's node id
            relative = relative[: -len(ALL_CASES)]
        out[pytest_node_id(relative).split("::", 1)[0]] = None
    return sorted(out)


__all__ = ["CONFIRMATIONS", "Settled", "confirm"]
