"""Stable text: what depends on where a tree is checked out, where its tools live, or which
random names a run picked is rewritten; every other difference is kept."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from diffgenome.recording.collect import stable


@pytest.fixture
def locations() -> Iterator[Path]:
    """Locations as a recorder in a checkout at ``/srv/checkouts/wt/proj`` would set them
    (the folder need not exist; outside pytest's temporary folders, whose pattern is
    rewritten too)."""
    root = Path("/srv/checkouts/wt/proj")
    stable.configure(
        [
            (str(root), "<root>"),
            (str(root / ".venv"), "<prefix>"),
            ("/home/someone", "<home>"),
            ("/", "<nothing>"),
        ]
    )
    try:
        yield root
    finally:
        stable.configure([])


def test_a_path_under_the_root_is_the_same_wherever_the_tree_is(locations: Path) -> None:
    here = stable.stable_text(f"{locations}/tests/data/a.json")
    assert here == "<root>/tests/data/a.json"
    stable.configure([("/elsewhere/deeper/other-name", "<root>")])
    assert stable.stable_text("/elsewhere/deeper/other-name/tests/data/a.json") == here


def test_locations_match_whole_paths_only(locations: Path) -> None:
    for text in (f"{locations}2/x", f"{locations}-backup/x", f"{locations}.git", f"/a{locations}"):
        assert stable.stable_text(text) == text
    assert stable.stable_text(f"'{locations}'") == "'<root>'"
    assert stable.stable_text(f"cd {locations} && ls") == "cd <root> && ls"
    assert stable.stable_text(f"file://{locations}/x") == "file://<root>/x"


def test_the_longest_location_wins(locations: Path) -> None:
    assert stable.stable_text(f"{locations}/.venv/bin/python") == "<prefix>/bin/python"
    assert stable.stable_text("/home/someone/.cache") == "<home>/.cache"


def test_a_location_given_as_a_symlink_is_also_matched_by_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    stable.configure([(str(link), "<root>")])
    try:
        assert stable.stable_text(f"{link}/a") == "<root>/a"
        assert stable.stable_text(f"{os.path.realpath(real)}/a") == "<root>/a"
    finally:
        stable.configure([])


def test_the_filesystem_root_is_never_a_location(locations: Path) -> None:
    assert stable.stable_text("/usr/lib/x") == "/usr/lib/x"
    assert "/" not in [m for m in stable.markers() if len(m) == 1]


def test_every_location_is_a_marker_or_holds_one(locations: Path) -> None:
    """The compiled core hands only marked text to Python: a location it does not see would
    make the two cores disagree."""
    for path in (str(locations), str(locations / ".venv"), "/home/someone"):
        assert any(marker in path for marker in stable.markers())


def _make_temporaries(folder: Path) -> list[str]:
    """Folders and files made by ``tempfile`` with several prefixes, suffixes and folders,
    while the recorder learns their names."""
    names = stable.TempfileNames()
    names.install()
    try:
        made = [
            tempfile.mkdtemp(prefix="build-", suffix="-out", dir=folder),
            tempfile.mkstemp(prefix="x", suffix=".txt", dir=folder)[1],
            tempfile.mkdtemp(),
        ]
        with tempfile.TemporaryDirectory(prefix="td_") as scratch:
            made.append(scratch)
    finally:
        names.uninstall()
    return made


def test_tempfile_names_with_any_prefix_suffix_and_folder(tmp_path: Path) -> None:
    made = _make_temporaries(tmp_path)
    twins = _make_temporaries(tmp_path)
    stable.configure([(str(tmp_path), "<basetemp>")])
    try:
        for one, other in zip(made, twins, strict=True):
            assert one != other
            assert stable.stable_text(one) == stable.stable_text(other), (one, other)
            assert "<random>" in stable.stable_text(one)
        assert stable.stable_text(made[0]) == "<basetemp>/build-<random>-out"
        assert stable.stable_text(made[1]) == "<basetemp>/x<random>.txt"
    finally:
        stable.configure([])
        stable._tempfile_names.clear()


def test_uninstall_restores_tempfile() -> None:
    before = tempfile._RandomNameSequence.__next__
    names = stable.TempfileNames()
    names.install()
    assert tempfile._RandomNameSequence.__next__ is not before
    names.uninstall()
    assert tempfile._RandomNameSequence.__next__ is before


def test_a_name_tempfile_did_not_make_is_kept(tmp_path: Path) -> None:
    stable.configure([(str(tmp_path), "<basetemp>")])
    try:
        text = f"{tmp_path}/build-abcdefgh-out"
        assert stable.stable_text(text) == "<basetemp>/build-abcdefgh-out"
    finally:
        stable.configure([])


def _first_label(pairs: list[tuple[str, str]]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for path, label in pairs:
        labels.setdefault(path, label)  # as ``configure`` reads them
    return labels


def test_the_interpreter_and_prefixes_are_locations() -> None:
    pairs = _first_label(stable.locations_of_this_process("/r/o/o/t", None, "/home/u"))
    assert pairs[sys.executable] == "<python>"
    assert pairs[sys.prefix] == "<prefix>"
    assert pairs["/r/o/o/t"] == "<root>"
    assert pairs["/home/u"] == "<home>"
    default = _first_label(
        stable.locations_of_this_process("/r", "/tmp/pytest-of-u/pytest-3", None)
    )
    assert "<basetemp>" not in default.values()  # the pattern makes it stable, per worker too
    given = _first_label(stable.locations_of_this_process("/r", "/data/bt/popen-gw1", None))
    assert given["/data/bt/popen-gw1"] == "<basetemp>"


def test_a_program_name_made_by_tempfile_is_stable_without_its_folder(tmp_path: Path) -> None:
    names = stable.TempfileNames()
    names.install()
    try:
        path = tempfile.mkstemp(prefix="hook-", suffix=".sh", dir=tmp_path)[1]
    finally:
        names.uninstall()
    try:
        assert stable.stable_program(os.path.basename(path)) == "hook-<random>.sh"
        assert stable.stable_program("tmpabcdefgh.sh") == "tmp<random>.sh"
        assert stable.stable_program("git") == "git"
    finally:
        stable._tempfile_names.clear()


def test_diffgenomes_own_files_are_one_location_wherever_it_runs_from() -> None:
    """``diffgenome diff`` runs the recorder from a copy in its disposable workspace; a
    warning said while a callback ran names that copy's tracer.py (google-auth)."""
    import diffgenome.recording.collect.tracer as tracer

    pairs = dict(stable.locations_of_this_process("/srv/proj", None, None))
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tracer.__file__))))
    assert pairs[package] == "<diffgenome>"
    stable.configure(stable.locations_of_this_process("/srv/proj", None, None))
    try:
        text = stable.stable_text(f"{tracer.__file__}:12")
        assert text == "<diffgenome>/recording/collect/tracer.py:12"
    finally:
        stable.configure([])
