"""End-to-end: what the test sees, first (#47, docs/diffing.md "Reach").

soupsieve 2.5 → 2.6 read as 295 changed tests, 2 of which anyone could see change (an
exception type); the rest ran a matcher more often with every result equal. Now each change
is tiered: what the test sees (outcome, what comes back into its own code, effects,
stand-ins, egress) before what changed only inside the project; the counts line, the first
screen and the Markdown lead with the first tier, and ``--fail-on seen`` gates on it alone.
Also: a print moved in an inner changed function is put down to that function, not to the
changed function above it, and ``while True`` never being false is no gap.
"""

from __future__ import annotations

from pathlib import Path

from e2e.helpers import GitRepo, cli, cli_json, write_files

BASE = {
    "pkg/__init__.py": "",
    "pkg/parse.py": """
        import sys


        def parse_longer(arg):
            if arg.startswith("--"):
                print("long option", arg)
                return arg[2:]
            return arg


        def parse_argv(argv):
            out = []
            for arg in argv:
                if arg:
                    out.append(parse_longer(arg))
            return out


        def count_words(text):
            words = 0
            for part in text.split():
                words += _one(part)
            return words


        def _one(part):
            return 1


        def drain(items):
            got = []
            while True:
                if not items:
                    break
                got.append(items.pop())
            return got
    """,
    "tests/test_parse.py": """
        from pkg.parse import count_words, drain, parse_argv


        def test_parse():
            assert parse_argv(["--spam=eggs", "x"]) == ["spam=eggs", "x"]


        def test_count():
            assert count_words("a b c") == 3


        def test_drain():
            assert drain([1, 2]) == [2, 1]
    """,
}


def _edit(repo: Path, *pairs: tuple[str, str]) -> None:
    path = repo / "pkg" / "parse.py"
    text = path.read_text()
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


INSIDE = ("        words += _one(part)\n", "        _one(part)\n        words += _one(part)\n")
MOVED_PRINT = ('print("long option", arg)', 'print("long option", arg, file=sys.stderr)')
EDITED_CALLER = ("        if arg:\n", '        if arg != "":\n')
EDITED_DRAIN = ("got.append(items.pop())", "got.insert(len(got), items.pop())")


def _repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.init(tmp_path / "repo")
    write_files(repo.path, BASE)
    repo.commit_all("base")
    return repo


def test_what_the_tests_see_leads_and_the_gate_can_keep_to_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _edit(repo.path, INSIDE)
    repo.commit_tracked("count each word twice, inside")
    _edit(repo.path, MOVED_PRINT, EDITED_CALLER, EDITED_DRAIN)
    repo.commit_tracked("the long option to stderr")

    # Only inside: changed, but no test sees it; the default gate fails, ``seen`` does not.
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~2", "HEAD~1")
    tests = {t["id"].rpartition("::")[2]: t for t in document["tests"]}
    assert tests["test_count"]["status"] == "changed"
    assert tests["test_count"]["reach"] == "internal"
    assert {c["reach"] for c in tests["test_count"]["changes"]} == {"internal"}
    assert (document["summary"]["seen"], document["summary"]["internal"]) == (0, 1)
    assert code == 1
    quiet, _ = cli_json(repo.path, tmp_path, "diff", "HEAD~2", "HEAD~1", "--fail-on", "seen")
    assert quiet == 0

    # Both tiers: the seen one first, everywhere.
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~2", "HEAD")
    tests = {t["id"].rpartition("::")[2]: t for t in document["tests"]}
    assert tests["test_parse"]["reach"] == "seen", tests["test_parse"]
    assert tests["test_count"]["reach"] == "internal"
    assert code == 1
    strict, _ = cli_json(repo.path, tmp_path, "diff", "HEAD~2", "HEAD", "--fail-on", "seen")
    assert strict == 1
    # The output moved in parse_longer is parse_longer's, not parse_argv's above it.
    [moved] = [c for c in document["causes"] if c["kind"] == "output_changed"]
    assert moved["origins"] == ["py:pkg.parse.parse_longer"], moved
    assert moved["sees"] is True
    assert document["causes"][0]["sees"] is True, document["causes"]
    # ``while True`` is never false: no gap says so.
    gaps = [g for c in document["code_changes"] for g in c["gaps"]]
    assert not any("`True`" in g or "while[" in g for g in gaps), gaps

    screen = cli(repo.path, "diff", "HEAD~2", "HEAD").stdout
    first = screen.splitlines()[0]
    assert "1 sees a change, 1 changed only inside the project (results equal)" in first, first
    review = screen.index("to review")
    inside = screen.index("changed only inside the project, results at the tests equal (1)")
    assert review < screen.index("tests/test_parse.py::test_parse") < inside
    assert inside < screen.index("tests/test_parse.py::test_count")
    markdown = tmp_path / "comment.md"
    assert cli(repo.path, "diff", "HEAD~2", "HEAD", "--markdown", str(markdown)).returncode == 1
    text = markdown.read_text()
    assert text.index("test_parse") < text.index("#### Changed only inside the project")
    assert text.index("#### Changed only inside the project") < text.index("test_count")


def test_a_bounded_value_set_says_what_it_does_not_know(tmp_path: Path) -> None:
    """Lines that restate a count are gone, and a value past the bound of 8 kept is said to
    be there, not gone (soupsieve: ``args: +36 more → +40 more``)."""
    repo = GitRepo.init(tmp_path / "repo")
    base_loop = "    for n in list(range(10)) * 2:\n        total += step(n)\n"
    write_files(
        repo.path,
        {
            "cnt/__init__.py": (
                "def step(n):\n    return 1\n\n\n"
                f"def count():\n    total = 0\n{base_loop}    return total > 0\n\n\n"
                "def early():\n    total = 0\n    for n in range(10):\n"
                "        total += step(n)\n    return total > 0\n"
            ),
            "tests/test_cnt.py": (
                "from cnt import count, early\n\n\n"
                "def test_count():\n    assert count() > 0\n\n\n"
                "def test_early():\n    assert early() > 0\n"
            ),
        },
    )
    repo.commit_all("base")
    init = repo.path / "cnt" / "__init__.py"
    text = init.read_text().replace("list(range(10)) * 2", "list(range(10)) * 3")
    init.write_text(text.replace("for n in range(10):", "for n in [99, *range(10)]:"))
    repo.commit_tracked("more calls; a new value first")
    code, document = cli_json(repo.path, tmp_path, "diff", "HEAD~1", "HEAD")
    assert code == 1
    tests = {t["id"].rpartition("::")[2]: t for t in document["tests"]}
    counted = tests["test_count"]["changes"]
    assert {c["kind"] for c in counted} == {"call_count_changed"}, counted
    [args] = [c for c in tests["test_early"]["changes"] if c["kind"] == "args_changed"]
    gone = [value for value in args["base"] if "overflow" not in value]
    assert gone and all(value.get("beyond") for value in gone), args
    screen = cli(repo.path, "diff", "HEAD~1", "HEAD").stdout
    assert "beyond the values kept on the other side, not necessarily gone" in screen, screen
