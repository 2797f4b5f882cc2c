"""End-to-end: values of the standard library's value types between project functions
(#24.7), over real git repositories.

A ``timedelta``, ``Decimal``, ``datetime`` or ``UUID`` had no canonical form, so its digest was
null on both sides and a changed deadline or amount read as the same value: a false
"unchanged". Now each has a form of its own; values fed by the clock differ between two
recordings of one commit and are masked by confirmation, also in a diff of two stored runs
whose commits the repository has.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import zlib
from pathlib import Path
from typing import Any

from diffgenome.protocol.formats import VALUES
from e2e.helpers import (
    PY,
    clean_env,
    cli,
    cli_json,
    git_commit,
    git_in,
    make_project,
    record,
    run_pytest,
    split_progress,
    test_genome,
    write_files,
)

BILLING = """
    import datetime as dt
    import decimal
    import uuid


    def grace():
        return dt.timedelta(days={days})


    def fee():
        return decimal.Decimal("{fee}")


    def opened():
        return dt.datetime(2024, 1, {day}, 9, 30, tzinfo=dt.timezone.utc)


    def account():
        return uuid.UUID(int={account})


    def due(start, period):
        return start + period


    def charge(amount, quantity):
        return amount * quantity


    def owner(account_id):
        return account_id.version is None


    def opened_on(moment):
        return moment.weekday() < 7
"""

TESTS = """
    from pkg import billing


    def test_grace():
        assert billing.due(billing.opened(), billing.grace()) is not None


    def test_fee():
        assert billing.charge(billing.fee(), 3) > 0


    def test_opened():
        assert billing.opened_on(billing.opened())


    def test_account():
        assert billing.owner(billing.account())
"""

BASE = {"days": 30, "fee": "2.50", "day": 1, "account": 7}


def _project(repo: Path, **values: object) -> None:
    write_files(
        repo,
        {
            "pkg/__init__.py": "",
            "pkg/billing.py": BILLING.format(**{**BASE, **values}),
            "tests/test_billing.py": TESTS,
        },
    )


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"].rpartition("::")[2]: t for t in document["tests"]}


def _changed_args(test: dict[str, Any]) -> set[str]:
    return {
        c["path"][-1] for c in test["changes"] if c["kind"] in ("args_changed", "result_changed")
    }


def test_changed_deadlines_amounts_times_and_ids_are_changes(tmp_path: Path) -> None:
    """Each value changes in one function and is handed to another: both show it. Before
    values revision 2 all four tests were ``unchanged`` (null digests on both sides)."""
    repo = tmp_path / "repo"
    _project(repo)
    git_commit(repo)
    _project(repo, days=31, fee="2.75", day=2, account=8)
    git_in(repo, "commit", "-qam", "a longer grace, a dearer fee, a later opening, another id")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert {name: t["status"] for name, t in tests.items() if name != "<import>"} == {
        "test_grace": "changed",
        "test_fee": "changed",
        "test_opened": "changed",
        "test_account": "changed",
    }
    assert _changed_args(tests["test_grace"]) >= {"py:pkg.billing.grace", "py:pkg.billing.due"}
    assert _changed_args(tests["test_fee"]) >= {"py:pkg.billing.fee", "py:pkg.billing.charge"}
    assert _changed_args(tests["test_opened"]) >= {
        "py:pkg.billing.opened",
        "py:pkg.billing.opened_on",
    }
    assert _changed_args(tests["test_account"]) == {
        "py:pkg.billing.account",
        "py:pkg.billing.owner",
    }
    for test in tests.values():
        for change in test["changes"]:
            if change["kind"] == "args_changed":
                for side in (change["base"], change["head"]):
                    assert all(entry["digest"] for entry in side), change
    assert code == 1


CLOCK = {
    "pkg/__init__.py": "",
    "pkg/clock.py": """
        import datetime as dt


        def now():
            return dt.datetime.now(dt.timezone.utc)


        def later(moment, minutes):
            return moment + dt.timedelta(minutes=minutes)


        def is_late(moment):
            return moment.year > 2000
    """,
    "tests/test_clock.py": """
        from pkg import clock


        def test_handed_around():
            assert clock.is_late(clock.later(clock.now(), 5))


        def test_fixed():
            assert clock.later(clock.now().replace(year=2024, month=1, day=1, hour=0, minute=0,
                                                   second=0, microsecond=0), 1).minute == 1
    """,
}


def test_clock_fed_values_are_masked_by_confirmation(tmp_path: Path) -> None:
    """``datetime.now()`` handed between project functions differs between any two
    recordings: unconfirmed it reads as a change, confirmed as ``unstable``."""
    repo = tmp_path / "repo"
    write_files(repo, CLOCK)
    git_commit(repo)
    # A module nothing imports: two programs (an identical tree's differences are unstable
    # without confirming them, docs/diffing.md "One program on both sides").
    write_files(repo, {"spare.py": "def spare():\n    return 1\n"})
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "an unrelated module")
    _, unconfirmed = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", "--no-confirm")
    assert _tests(unconfirmed)["test_handed_around"]["status"] == "changed"
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert tests["test_handed_around"]["status"] == "unstable"
    assert any(
        r.startswith("unstable (base confirmation)") and "py:pkg.clock.later" in r
        for r in tests["test_handed_around"]["reasons"]
    ), tests["test_handed_around"]["reasons"]
    assert document["summary"]["confirmed"] >= 1
    assert code == 0


def _record_at(repo: Path, store: Path) -> str:
    """``pytest --genome`` in ``repo`` into ``store``; the id of the run it made."""
    done = run_pytest(repo, "--genome", f"--genome-store={store}")
    assert done.returncode == 0, done.stdout + done.stderr
    runs = subprocess.run(
        [PY, "-m", "diffgenome.analysis.cli", "runs", "--store", str(store), "--json", "-"],
        cwd=repo,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(runs.stdout)[0]["id"])


def test_a_diff_of_stored_runs_whose_commits_the_repository_has_confirms(
    tmp_path: Path,
) -> None:
    """Two runs ``pytest --genome`` stored, one per commit: ``diffgenome diff RUN RUN``
    records their tests that differ again at those commits, so the clock's noise is
    ``unstable`` as in a diff of revisions (it was ``changed``, with the note that a run
    cannot be recorded again)."""
    repo = tmp_path / "repo"
    store = tmp_path / "store"
    write_files(repo, CLOCK)
    git_commit(repo)
    base_run = _record_at(repo, store)
    git_in(repo, "commit", "-q", "--allow-empty", "-m", "same tree")
    head_run = _record_at(repo, store)
    code, document = cli_json(repo, tmp_path, "diff", base_run, head_run, "--store", str(store))
    tests = _tests(document)
    assert tests["test_handed_around"]["status"] == "unstable", tests["test_handed_around"]
    assert document["summary"]["confirmed"] >= 1
    assert code == 0


def test_a_recording_of_values_revision_1_is_not_compared_with_revision_2(tmp_path: Path) -> None:
    """A run recorded before values revision 2 (no ``values`` in its config) has null
    digests where a current one has digests: the diff says so in one line and exits 2,
    rather than reporting every such value as changed."""
    repo = tmp_path / "repo"
    _project(repo)
    git_commit(repo)
    store = tmp_path / "store"
    _record_at(repo, store)
    exported = cli(
        repo, "export", "latest", "--store", str(store), "-o", str(tmp_path / "new.json")
    )
    assert exported.returncode == 0, exported.stderr
    current = json.loads((tmp_path / "new.json").read_text())
    assert current["run"]["config"]["values"] == VALUES
    config = {k: v for k, v in current["run"]["config"].items() if k != "values"}
    (tmp_path / "old.json").write_text(
        json.dumps(dict(current, run=dict(current["run"], config=config)))
    )
    same = cli(repo, "diff", str(tmp_path / "old.json"), str(tmp_path / "old.json"))
    assert same.returncode == 0, same.stderr
    mixed = cli(repo, "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert mixed.returncode == 2
    _, lines = split_progress(mixed.stderr)
    assert len(lines) == 1 and "values revision 1" in lines[0], mixed.stderr
    assert "Traceback" not in mixed.stderr


TABLES = {
    "pkg/__init__.py": "",
    "pkg/tables.py": """
        def _dashes(width, fill):
            return fill * width


        def rule(width):
            return _dashes(width, "{fill}")


        def connect(host, api_key):
            return len(api_key) > 0


        def label(text):
            return text.title()
    """,
    "tests/test_tables.py": """
        import os

        from pkg import tables


        def test_rule():
            assert len(tables.rule(3)) == 3


        def test_connect():
            # Read from a file: in the source, a code change would quote it (as source).
            with open(os.path.join(os.path.dirname(__file__), "key.txt")) as key:
                assert tables.connect("db.internal", key.read())


        def test_label():
            assert tables.label(os.environ["SERVICE_LABEL"]) != "{fill}"
    """,
}


def _tables(repo: Path, fill: str, api_key: str) -> None:
    write_files(repo, {name: text.replace("{fill}", fill) for name, text in TABLES.items()})
    (repo / "tests" / "key.txt").write_text(api_key)


def test_with_previews_a_changed_short_string_reads_as_itself(tmp_path: Path) -> None:
    """``-- --genome-preview``: the terminal, Markdown and HTML reports show
    ``'---' → '==='``; a secret-named parameter's value and a value read from the
    environment never show, in any output, nor in the export unless asked."""
    repo = tmp_path / "repo"
    # Words, so that no secret rule but the parameter's name and the environment hide them.
    old_key, new_key = "opensesame", "letmein"
    plain = "grandmother rhubarb"  # in a variable whose name says nothing secret
    _tables(repo, "-", old_key)
    git_commit(repo)
    _tables(repo, "=", new_key)
    git_in(repo, "commit", "-qam", "rules drawn with '=', another key")
    markdown, site = tmp_path / "diff.md", tmp_path / "site"
    done = subprocess.run(
        [
            *(PY, "-m", "diffgenome.analysis.cli", "diff", "HEAD~1", "HEAD", "--all"),
            *("--markdown", str(markdown), "--html", str(site), "--json", str(tmp_path / "d.json")),
            *("--", "-p", "no:cacheprovider", "-p", "no:randomly", "--genome-preview"),
        ],
        cwd=repo,
        env=clean_env({"TMPDIR": str(tmp_path), "COLUMNS": "300", "SERVICE_LABEL": plain}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    shown = "'---' \u2192 '==='"
    assert f"py:pkg.tables._dashes results: {shown}" in done.stdout, done.stdout
    assert "py:pkg.tables._dashes args: width=3, fill='-' \u2192 width=3, fill='='" in done.stdout
    assert shown in markdown.read_text()
    pages = {p.name: p.read_text() for p in site.rglob("*.html")}
    escaped = "&#x27;---&#x27; \u2192 &#x27;===&#x27;"
    assert any(escaped in page for page in pages.values()), "no page shows the change"
    # The key changed too: it is a change, written without its value.
    document = json.loads((tmp_path / "d.json").read_text())
    connect = _tests(document)["test_connect"]
    assert connect["status"] == "changed"
    assert "py:pkg.tables.connect args: host=str, api_key=str (value" in done.stdout
    # Nothing private anywhere: reports, the store, the export with and without previews.
    store = repo / ".diffgenome"
    head_run = document["head"]["run"]
    exported = cli(repo, "export", head_run).stdout
    with_previews = cli(repo, "export", head_run, "--with-previews").stdout
    assert "'==='" not in exported and "'==='" in with_previews
    hay = {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "markdown": markdown.read_text(),
        "json": (tmp_path / "d.json").read_text(),
        "export": exported,
        "export --with-previews": with_previews,
        **{f"html {name}": text for name, text in pages.items()},
    }
    blobs = {name: text.encode() for name, text in hay.items()}
    # Every file of the store, the names cache's entries too (they keep no source text).
    for path in store.rglob("*"):
        if path.is_file():
            blobs[f"store {path.relative_to(store)}"] = path.read_bytes()
    conn = sqlite3.connect(store / "genome.sqlite")
    try:
        for (body,) in conn.execute("SELECT body FROM genomes"):
            blobs[f"store body {len(blobs)}"] = zlib.decompress(body)
    finally:
        conn.close()
    leaks = [
        (secret, where)
        for secret in (old_key, new_key, plain, plain.title())
        for where, blob in blobs.items()
        if secret.encode() in blob
    ]
    assert leaks == []
    # Positive control: the bodies hold previews (so the scan above looked at them).
    assert any(b'"preview":"\'===\'"' in blob for blob in blobs.values())


def test_a_recorded_child_process_keeps_previews_like_its_parent(tmp_path: Path) -> None:
    """Previews are read back from canonical forms when the parent exports the phase, so a
    recorded Python child's values get them as the parent's do (under either core)."""
    project = make_project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/t.py": """
                def dashes(n, fill):
                    return fill * n
            """,
            "tests/test_child.py": """
                import subprocess
                import sys

                from pkg import t


                def test_child():
                    t.dashes(3, "-")
                    code = "from pkg import t; t.dashes(4, '=')"
                    subprocess.run([sys.executable, "-c", code], check=True)
            """,
        },
    )
    doc = record(project, "--genome-preview")
    phase = test_genome(doc, "::test_child")["phases"]["call"]
    shown = sorted(
        entry["preview"]
        for node in phase["nodes"]
        if node.get("symbol") == "py:pkg.t.dashes"
        for entry in node["args"] + node["results"]
    )
    assert shown == ["'---'", "'===='", "n=3, fill='-'", "n=4, fill='='"], shown


def test_cases_without_a_canonical_form_pair_by_their_repr(tmp_path: Path) -> None:
    """A parametrized value that still has no canonical form (a ``PurePosixPath``) pairs its
    cases by its stable ``repr`` when a case inserted first renumbers pytest's ids."""
    test = """
        import pathlib

        import pytest

        CASES = [{cases}]


        @pytest.mark.parametrize("where", CASES)
        def test_parts(where):
            assert where.parts
    """
    cases = 'pathlib.PurePosixPath("a"), pathlib.PurePosixPath("b")'
    repo = tmp_path / "repo"
    write_files(repo, {"pkg/__init__.py": "", "tests/test_parts.py": test.format(cases=cases)})
    git_commit(repo)
    inserted = 'pathlib.PurePosixPath("z"), ' + cases
    write_files(repo, {"tests/test_parts.py": test.format(cases=inserted)})
    git_in(repo, "commit", "-qam", "a case inserted first")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD")
    tests = _tests(document)
    assert tests["test_parts[where0]"]["status"] == "added"
    assert tests["test_parts[where1]"]["base_id"].endswith("test_parts[where0]")
    assert tests["test_parts[where2]"]["base_id"].endswith("test_parts[where1]")
    assert {tests[name]["status"] for name in ("test_parts[where1]", "test_parts[where2]")} == {
        "unchanged"
    }
    assert code == 1  # a test was added


def test_a_changed_exception_message_is_a_changed_result(tmp_path: Path) -> None:
    """cachetools: ``raise ValueError("value too large")`` given the sizes in its message.
    The tests only check that a ``ValueError`` is raised, and a raising call kept only its
    exit's type: 207 of 215 tests read ``unchanged``. What a call raises is among its
    results now (values revision 5), by its class and its ``args``."""
    repo = make_project(
        tmp_path,
        {
            "box/__init__.py": "",
            "box/core.py": """
                def put(size, limit=3):
                    if size > limit:
                        raise ValueError("too large")
                    return size
            """,
            "tests/test_box.py": """
                import pytest

                from box.core import put


                def test_too_large():
                    with pytest.raises(ValueError):
                        put(5)


                def test_fits():
                    assert put(2) == 2
            """,
        },
    )
    core = repo / "box" / "core.py"
    core.write_text(core.read_text().replace('"too large"', '"too large: %d > %d" % (size, limit)'))
    git_in(repo, "commit", "-qam", "say the sizes")
    code, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", "--no-confirm")
    tests = _tests(document)
    assert tests["test_fits"]["status"] == "unchanged"
    too_large = tests["test_too_large"]
    assert too_large["status"] == "changed", too_large
    [change] = too_large["changes"]
    assert change["kind"] == "result_changed"
    assert change["symbol"] == "py:box.core.put"
    assert code == 1
    # The genome keeps the exception among the results of the call that raised it.
    doc = record(repo)
    [put] = [
        node
        for node in test_genome(doc, "test_too_large")["phases"]["call"]["nodes"]
        if node.get("symbol") == "py:box.core.put"
    ]
    assert put["exits"] == {"raised:py:builtins.ValueError": 1}
    assert [value["shape"] for value in put["results"]] == ["builtins.ValueError"]
    assert put["results"][0]["digest"] is not None
    # Another type with the same message: the exit says so, and the result does not say it
    # again.
    # (UnicodeError is a ValueError: the test still passes.)
    core.write_text(core.read_text().replace("raise ValueError(", "raise UnicodeError("))
    git_in(repo, "commit", "-qam", "another error")
    _, document = cli_json(repo, tmp_path, "diff", "HEAD~1", "HEAD", "--no-confirm")
    kinds = [change["kind"] for change in _tests(document)["test_too_large"]["changes"]]
    assert kinds == ["exit_changed"], kinds
