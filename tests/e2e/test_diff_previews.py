"""End-to-end: values a reviewer can read, where nothing leaves the machine (#47.2,
docs/diffing.md "Values a reviewer can read").

On a terminal outside CI, ``diffgenome diff`` records with previews and shows a short value as
text (``'--spam=eggs' → "'--spam=eggs'"``) where it named it by label; the JSON, Markdown and
HTML reports leave them out unless ``--with-previews``; a report that names values by label
says how to read them.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

from e2e.helpers import DIFF_PYTEST_ARGS, PY, GitRepo, clean_env, cli, write_files

PROJECT = {
    "opts/__init__.py": "",
    "opts/fmt.py": "def fmt(option):\n    return option\n",
    "tests/test_fmt.py": (
        "from opts.fmt import fmt\n\n\ndef test_fmt():\n    assert 'spam' in fmt('--spam=eggs')\n"
    ),
}
TEXT = "'--spam=eggs' \u2192 \"'--spam=eggs'\""


def _repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.init(tmp_path / "repo")
    write_files(repo.path, PROJECT)
    repo.commit_all("base")
    write_files(repo.path, {"opts/fmt.py": "def fmt(option):\n    return repr(option)\n"})
    repo.commit_tracked("quoted")
    return repo


def _on_a_terminal(repo: Path, *args: str, env: dict[str, str]) -> str:
    """``diffgenome ARGS`` with its standard output on a pseudo-terminal; what it printed."""
    command = [PY, "-m", "diffgenome.analysis.cli", *args]
    main, child = pty.openpty()
    proc = subprocess.Popen(
        command, cwd=repo, env=env, stdout=child, stderr=subprocess.PIPE, close_fds=True
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal's other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    proc.wait(timeout=300)
    assert proc.returncode == 1, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_a_terminal_outside_ci_reads_values_as_text(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    env = clean_env({"TMPDIR": str(tmp_path), "COLUMNS": "300", "NO_COLOR": "1"})
    env.pop("CI", None)
    report = tmp_path / "diff.json"
    args = ("diff", "HEAD~1", "HEAD", "--json", str(report), "--", *DIFF_PYTEST_ARGS)
    shown = _on_a_terminal(repo.path, *args, env=env)
    assert TEXT in shown, shown
    # The JSON report leaves the machine: no preview in it.
    assert "preview" not in report.read_text()
    assert "--spam=eggs" not in report.read_text()


def test_a_pipe_or_ci_names_values_by_label_and_says_how_to_read_them(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = cli(repo.path, "diff", "HEAD~1", "HEAD")
    assert done.returncode == 1, done.stderr
    assert "(value A)" in done.stdout and TEXT not in done.stdout
    assert "note: values are named by label (value A): recorded with --preview" in done.stdout
    # Asked for: text in the terminal report; in the files only with --with-previews.
    report, kept = tmp_path / "plain.json", tmp_path / "kept.json"
    asked = cli(repo.path, "diff", "HEAD~1", "HEAD", "--preview", "--json", str(report))
    assert asked.returncode == 1, asked.stderr
    assert TEXT in asked.stdout, asked.stdout
    assert "--spam=eggs" not in report.read_text()
    both = cli(
        repo.path, "diff", "HEAD~1", "HEAD", "--preview", "--with-previews", "--json", str(kept)
    )
    assert both.returncode == 1, both.stderr
    changes = [c for t in json.loads(kept.read_text())["tests"] for c in t["changes"]]
    assert any("--spam=eggs" in json.dumps(c["base"]) for c in changes), changes


def test_what_a_test_printed_reads_as_text_under_previews(tmp_path: Path) -> None:
    """docopt-ng's pull request: a message edited and printed. With previews the output
    change names the text on both sides, not two labels."""
    repo = GitRepo.init(tmp_path / "repo")
    write_files(
        repo.path,
        {
            "say/__init__.py": "def hello(name):\n    print(f'hello {name}')\n",
            "tests/test_say.py": "from say import hello\n\n\ndef test_hello():\n    hello('ada')\n",
        },
    )
    repo.commit_all("base")
    write_files(repo.path, {"say/__init__.py": "def hello(name):\n    print(f'hi {name}')\n"})
    repo.commit_tracked("shorter")
    done = cli(repo.path, "diff", "HEAD~1", "HEAD", "--preview")
    assert done.returncode == 1, done.stderr
    assert "stdout 'hello ada\\n' (1 line) \u2192 stdout 'hi ada\\n' (1 line)" in done.stdout, (
        done.stdout
    )


def test_an_edited_message_reads_as_text_and_html_cells_read_as_the_terminal(
    tmp_path: Path,
) -> None:
    """semver's pull request: a ValueError's message reworded reads as the exception's
    construction; the HTML report's cell of a changed output reads as the terminal says it,
    not as raw JSON."""
    repo = GitRepo.init(tmp_path / "repo")
    write_files(
        repo.path,
        {
            "ver/__init__.py": (
                "def parse(text):\n"
                "    if not text[:1].isdigit():\n"
                "        raise ValueError(f'{text} is not valid')\n"
                "    print('parsed', text)\n"
                "    return int(text)\n"
            ),
            "tests/test_ver.py": (
                "import pytest\n\nfrom ver import parse\n\n\n"
                "def test_bad():\n    with pytest.raises(ValueError):\n        parse('x')\n\n\n"
                "def test_good():\n    assert parse('3') == 3\n"
            ),
        },
    )
    repo.commit_all("base")
    init = repo.path / "ver" / "__init__.py"
    text = init.read_text().replace("is not valid", "is not a valid version")
    init.write_text(text.replace("print('parsed', text)", "print('parsed:', text)"))
    repo.commit_tracked("clearer")
    site = tmp_path / "site"
    done = cli(repo.path, "diff", "HEAD~1", "HEAD", "--preview", "--html", str(site))
    assert done.returncode == 1, done.stderr
    assert "ValueError('x is not valid') \u2192 ValueError('x is not a valid version')" in (
        done.stdout
    ), done.stdout
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "stdout" in pages and '{"digest"' not in pages and "&quot;digest&quot;" not in pages
