"""End-to-end: an archive a test writes is digested by what it holds, not by the time its
format stamps into it (#51.1).

pypa/build's suite writes sdists and wheels: a gzip header carries the time it was written,
each tar member its mtime, each zip entry a DOS date and time. Digested by their bytes, two
recordings of one commit differed in every such test, which came out ``unstable`` on an
identical tree (22 tests of build 1.6.1) and masked whatever else the test wrote. Here the
tests stamp their archives with a time drawn anew in every session (from ``os.urandom``:
the clock's part, without waiting for it), as ``python -m build`` stamps the time of day: a diff
of one tree twice finds every archive test ``unchanged``, and a change of what goes into the
archives (a data file, no code) is ``changed`` in each of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.helpers import GitRepo, cli_json, write_files

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/data/readme.txt": "demo 1.0.0\n",
    "pkg/pack.py": """
        import gzip
        import io
        import os
        import tarfile
        import time
        import zipfile

        HERE = os.path.dirname(__file__)


        def sources(folder):
            tree = os.path.join(folder, "demo-1.0.0")
            os.makedirs(tree)
            with open(os.path.join(HERE, "data", "readme.txt"), "rb") as source:
                readme = source.read()
            for name, content in (("README", readme), ("setup.py", b"setup()\\n")):
                path = os.path.join(tree, name)
                with open(path, "wb") as out:
                    out.write(content)
                # A time of its own in every session, as the time of day is; drawn where
                # no call of the project hands it on (python -m build reads the clock in
                # the standard library).
                when = 1_500_000_000 + int.from_bytes(os.urandom(3), "big")
                os.utime(path, (when, when))
            return tree


        def sdist(folder):
            tree = sources(folder)
            target = os.path.join(folder, "demo-1.0.0.tar.gz")
            when = 1_500_000_000 + int.from_bytes(os.urandom(3), "big")
            with open(target, "wb") as raw:
                with gzip.GzipFile("demo-1.0.0.tar", "wb", fileobj=raw, mtime=when) as gz:
                    with tarfile.open(fileobj=gz, mode="w") as tar:
                        tar.add(tree, arcname="demo-1.0.0")
            return target


        def sdist_now(folder):
            # As python -m build writes it: the gzip header takes the time of day.
            tree = sources(folder)
            target = os.path.join(folder, "now-1.0.0.tar.gz")
            with tarfile.open(target, "w:gz") as tar:
                tar.add(tree, arcname="demo-1.0.0")
            return target


        def wheel(folder):
            tree = sources(folder)
            target = os.path.join(folder, "demo-1.0.0-py3-none-any.whl")
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as whl:
                for name in sorted(os.listdir(tree)):
                    whl.write(os.path.join(tree, name), f"demo/{name}")
                when = 1_500_000_000 + int.from_bytes(os.urandom(3), "big")
                info = zipfile.ZipInfo("demo-1.0.0.dist-info/WHEEL", time.gmtime(when)[:6])
                whl.writestr(info, "Wheel-Version: 1.0\\n")
            return target


        def compressed(folder):
            target = os.path.join(folder, "readme.txt.gz")
            with open(os.path.join(HERE, "data", "readme.txt"), "rb") as source:
                readme = source.read()
            when = 1_500_000_000 + int.from_bytes(os.urandom(3), "big")
            with gzip.GzipFile(target, "wb", mtime=when) as out:
                out.write(readme)
            return target
    """,
    "tests/test_pack.py": """
        import os

        from pkg import pack


        def test_sdist(tmp_path):
            assert os.path.getsize(pack.sdist(str(tmp_path)))


        def test_sdist_now(tmp_path):
            assert os.path.getsize(pack.sdist_now(str(tmp_path)))


        def test_wheel(tmp_path):
            assert os.path.getsize(pack.wheel(str(tmp_path)))


        def test_gzip(tmp_path):
            assert os.path.getsize(pack.compressed(str(tmp_path)))
    """,
}

ARCHIVES = {
    "test_sdist": "demo-1.0.0.tar.gz",
    "test_sdist_now": "now-1.0.0.tar.gz",
    "test_wheel": "demo-1.0.0-py3-none-any.whl",
    "test_gzip": "readme.txt.gz",
}


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def test_archives_stamped_with_the_time_are_unchanged_on_one_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    GitRepo(repo).commit_empty("same tree")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    for name in ARCHIVES:
        assert tests[name]["status"] == "unchanged", tests[name]
    assert document["summary"]["unstable"] == 0
    assert document["summary"]["confirmed"] == 0  # nothing differed: nothing recorded again
    assert code == 0


def test_what_goes_into_the_archives_is_still_a_change(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_files(repo, PROJECT)
    GitRepo.init(repo).commit_all("initial")
    write_files(repo, {"pkg/data/readme.txt": "demo 1.0.1\n"})
    GitRepo(repo).commit_tracked("another readme, no code")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    for name, archive in ARCHIVES.items():
        test = tests[name]
        assert test["status"] == "changed", test
        written = [
            entry["path"].rpartition("/")[2]
            for change in test["changes"]
            if change["kind"] == "file_changed"
            for side in ("base", "head")
            for entry in change[side]
        ]
        assert archive in written, test["changes"]
        assert not any(r.startswith("unstable") for r in test["reasons"]), test["reasons"]
    assert code == 1
