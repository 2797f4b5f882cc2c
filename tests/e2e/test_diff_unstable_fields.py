"""End-to-end: instability belongs to what varies, not to the field it shares (#51.2).

A field (the files a phase wrote, the arguments a call was given) that differed between two
recordings of one commit masked every difference base and head showed in it: a test that
writes a token drawn anew each time *and* a report whose content changed was ``unstable``,
and the report's change was no longer seen. Now a difference that every recording of base
shows alike and every recording of head shows alike stays ``changed``, listed beside the
part that varies, which the reasons name apart. The change here is a data file (no code), so
nothing is kept because the test runs changed code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/data/level.txt": "info\n",
    "pkg/report.py": """
        import os

        LEVEL = os.path.join(os.path.dirname(__file__), "data", "level.txt")


        def write(folder):
            with open(os.path.join(folder, "stamp.txt"), "w") as out:
                out.write(os.urandom(8).hex())
            with open(LEVEL) as source, open(os.path.join(folder, "report.txt"), "w") as out:
                out.write(source.read())


        def stamp_only(folder):
            with open(os.path.join(folder, "stamp.txt"), "w") as out:
                out.write(os.urandom(8).hex())


        def render(value):
            return f"<{value}>"
    """,
    "tests/test_report.py": """
        import os

        from pkg import report


        def test_files(tmp_path):
            report.write(str(tmp_path))


        def test_values():
            assert report.render(os.urandom(4).hex())
            with open(report.LEVEL) as source:
                assert report.render(source.read().strip())


        def test_noise_only(tmp_path):
            report.stamp_only(str(tmp_path))
            assert report.render(os.urandom(4).hex())
    """,
}


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def _names(change: dict[str, Any]) -> set[str]:
    return {entry["path"].rpartition("/")[2] for side in ("base", "head") for entry in change[side]}


def test_a_change_that_held_stays_changed_beside_what_varies(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/data/level.txt": "debug\n"})
    GitRepo(repo).commit_tracked("another level, no code")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)

    files = tests["test_files"]
    assert files["status"] == "changed", files
    [written] = [c for c in files["changes"] if c["kind"] == "file_changed"]
    assert _names(written) == {"report.txt"}, written  # the stamp is not a change ...
    unstable = [r for r in files["reasons"] if r.startswith("unstable (")]
    assert unstable and all("stamp.txt" in r and "report.txt" not in r for r in unstable)

    values = tests["test_values"]
    assert values["status"] == "changed", values
    kinds = {c["kind"]: c for c in values["changes"] if c["symbol"] == "py:pkg.report.render"}
    assert set(kinds) == {"args_changed", "result_changed"}, values["changes"]
    for change in kinds.values():  # the level's value on each side, never the random token
        assert (len(change["base"]), len(change["head"])) == (1, 1), change
    assert any(r.startswith("unstable (") and "render" in r for r in values["reasons"])

    # What only varies stays unstable.
    noise = tests["test_noise_only"]
    assert (noise["status"], noise["changes"]) == ("unstable", []), noise
    assert code == 1
