"""A release and a pull request on a project never used here before (session 28): xmltodict.

Builds a git repository from the sdists of xmltodict 0.14.1 and 0.14.2 (``main`` is 0.14.2),
then branches for what a reviewer meets: the pull request ``pr`` (a fix with its new test, a
helper extracted from a method with a local renamed, a new test with a mock, a print in a
test moved after its assertions) and five more refactors each on its own branch (a private
method renamed, a helper inlined, an ``if`` made a conditional expression, comments and a
docstring, a loop body extracted into a module function). Every pair is diffed with
``diffgenome diff`` as a user runs it, from the ``tests/`` subfolder, and the first line and
exit status of each report are printed.

    python experiments/xmltodict_pr.py [--work DIR] [--python PY]

``--python``: an interpreter >= 3.12 for the project's virtualenv (default: the first that
``scripts/find-python`` finds); the ``diffgenome`` this script runs is the one installed
with it (``.venv/bin/diffgenome`` of this repository, as ``make venv`` makes it). What it
printed in session 28 is in docs/experiments.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# `truth` is the package next to this file (the release and mutant harness).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from truth.history import git

REPO = Path(__file__).resolve().parents[1]
FILES = ("LICENSE", "MANIFEST.in", "README.md", "setup.cfg", "setup.py", "xmltodict.py", "tests")

# A commit: (its message, its edits (file, old text, new text)); each old text occurs once.
Edit = tuple[str, str, str]
PR: list[tuple[str, list[Edit]]] = [
    (
        "unparse: boolean attributes as true/false, like element values",
        [
            (
                "xmltodict.py",
                "                if not isinstance(iv, str):\n"
                "                    iv = str(iv)\n"
                "                attrs[ik[len(attr_prefix):]] = iv",
                "                if isinstance(iv, bool):\n"
                "                    iv = 'true' if iv else 'false'\n"
                "                elif not isinstance(iv, str):\n"
                "                    iv = str(iv)\n"
                "                attrs[ik[len(attr_prefix):]] = iv",
            ),
            (
                "tests/test_dicttoxml.py",
                "        xml = unparse(dict(x=False))\n"
                "        self.assertEqual(xml, expected_xml)\n",
                "        xml = unparse(dict(x=False))\n"
                "        self.assertEqual(xml, expected_xml)\n\n"
                "    def test_boolean_attribute_unparse(self):\n        expected_xml = '<?xml "
                'version="1.0" encoding="utf-8"?>\\n<x a="true" b="false"></x>\'\n'
                "        xml = unparse({'x': {'@a': True, '@b': False}})\n"
                "        self.assertEqual(xml, expected_xml)\n",
            ),
        ],
    ),
    (
        "SAX handler: the joined character data in one helper",
        [
            (
                "xmltodict.py",
                "            if item is None:\n                item = (None if not self.data\n"
                "                        else self.cdata_separator.join(self.data))\n\n"
                "            should_continue = self.item_callback(self.path, item)\n"
                "            if not should_continue:",
                "            if item is None:\n                item = self._joined_data()\n\n"
                "            keep_going = self.item_callback(self.path, item)\n"
                "            if not keep_going:",
            ),
            (
                "xmltodict.py",
                "            data = (None if not self.data\n"
                "                    else self.cdata_separator.join(self.data))\n"
                "            item = self.item",
                "            data = self._joined_data()\n            item = self.item",
            ),
            (
                "xmltodict.py",
                "    def characters(self, data):",
                "    def _joined_data(self):\n        return (None if not self.data\n"
                "                else self.cdata_separator.join(self.data))\n\n"
                "    def characters(self, data):",
            ),
        ],
    ),
    (
        "tests: force_list asked of the handler, checked with a mock",
        [
            (
                "tests/test_xmltodict.py",
                "from xml.parsers import expat\n",
                "from xml.parsers import expat\nfrom unittest import mock\nimport xmltodict\n",
            ),
            (
                "tests/test_xmltodict.py",
                "class XMLToDictTestCase(unittest.TestCase):\n",
                "class XMLToDictTestCase(unittest.TestCase):\n\n"
                "    def test_force_list_is_asked_of_the_handler(self):\n"
                "        with mock.patch.object(xmltodict._DictSAXHandler, '_should_force_list',\n"
                "                               return_value=True) as forced:\n"
                "            result = parse('<a><b>1</b></a>')\n"
                "        print('parsed:', result)\n"
                "        self.assertEqual(result, {'a': [{'b': ['1']}]})\n"
                "        self.assertEqual(forced.call_count, 2)\n",
            ),
        ],
    ),
    (
        "tests: the debugging print after the assertions",
        [
            (
                "tests/test_xmltodict.py",
                "        print('parsed:', result)\n"
                "        self.assertEqual(result, {'a': [{'b': ['1']}]})\n"
                "        self.assertEqual(forced.call_count, 2)\n",
                "        self.assertEqual(result, {'a': [{'b': ['1']}]})\n"
                "        self.assertEqual(forced.call_count, 2)\n"
                "        print('parsed:', result)\n",
            )
        ],
    ),
]
REFACTORS: dict[str, list[Edit]] = {
    "r-rename": [
        (
            "xmltodict.py",
            "            if self._should_force_list(key, data):",
            "            if self._forced_list(key, data):",
        ),
        (
            "xmltodict.py",
            "    def _should_force_list(self, key, value):",
            "    def _forced_list(self, key, value):",
        ),
    ],
    "r-inline": [
        (
            "xmltodict.py",
            "        attrs = self._attrs_to_dict(attrs)\n",
            "        if not isinstance(attrs, dict):\n"
            "            attrs = self.dict_constructor(zip(attrs[0::2], attrs[1::2]))\n",
        ),
        (
            "xmltodict.py",
            "    def _attrs_to_dict(self, attrs):\n        if isinstance(attrs, dict):\n"
            "            return attrs\n"
            "        return self.dict_constructor(zip(attrs[0::2], attrs[1::2]))\n\n",
            "",
        ),
    ],
    "r-ternary": [
        (
            "xmltodict.py",
            "        if not short_namespace:\n            return name\n        else:\n"
            "            return self.namespace_separator.join((short_namespace, name))\n",
            "        return (name if not short_namespace\n"
            "                else self.namespace_separator.join((short_namespace, name)))\n",
        )
    ],
    "r-comments": [
        (
            "xmltodict.py",
            "def _process_namespace(name, namespaces, ns_sep=':', attr_prefix='@'):",
            "# Namespaces of a key, as unparse writes it.\n"
            "def _process_namespace(name, namespaces, ns_sep=':', attr_prefix='@'):",
        ),
        (
            "xmltodict.py",
            "class ParsingInterrupted(Exception):\n    pass\n",
            'class ParsingInterrupted(Exception):\n    """Raised when an item callback asks to'
            ' stop."""\n',
        ),
    ],
}


def apply(repo: Path, edits: list[Edit]) -> None:
    for file, old, new in edits:
        path = repo / file
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{file}: the edit's old text occurs {text.count(old)} times")
        path.write_text(text.replace(old, new))


def extract_split(repo: Path) -> None:
    """``r-extract-fn``: the loop that splits a value into text, attributes and children
    moved out of ``_emit`` into a module function ``_split``."""
    path = repo / "xmltodict.py"
    text = path.read_text()
    start = text.index("        cdata = None\n        attrs = _dict()\n        children = []\n")
    end_marker = "            children.append((ik, iv))\n"
    end = text.index(end_marker, start) + len(end_marker)
    body = "\n".join(line[4:] if line.strip() else line for line in text[start:end].splitlines())
    call = (
        "        cdata, attrs, children = _split(v, attr_prefix, cdata_key, namespaces,\n"
        "                                        namespace_separator)\n"
    )
    text = text[:start] + call + text[end:]
    helper = (
        "def _split(v, attr_prefix, cdata_key, namespaces, namespace_separator):\n"
        + body
        + "\n    return cdata, attrs, children\n\n\n"
    )
    at = text.index("def _emit(key, value, content_handler,")
    path.write_text(text[:at] + helper + text[at:])


def sdist(version: str, into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"xmltodict=={version}", "-d", str(into)],
        check=True,
    )  # fmt: skip
    [archive] = into.glob(f"xmltodict-{version}.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / f"xmltodict-{version}"


def build(work: Path, python: str) -> Path:
    repo = work / "xmltodict"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text(".venv/\n*.egg-info/\n__pycache__/\n.diffgenome/\n")
    for version in ("0.14.1", "0.14.2"):
        unpacked = sdist(version, work)
        for name in FILES:
            source, target = unpacked / name, repo / name
            shutil.rmtree(target, ignore_errors=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, target)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"xmltodict {version}")
    git(repo, "tag", "v0.14.2")
    git(repo, "checkout", "-q", "-b", "pr")
    for message, edits in PR:
        apply(repo, edits)
        git(repo, "commit", "-qam", message)
    for name, edits in REFACTORS.items():
        git(repo, "checkout", "-q", "-B", name, "main")
        apply(repo, edits)
        git(repo, "commit", "-qam", name)
    git(repo, "checkout", "-q", "-B", "r-extract-fn", "main")
    extract_split(repo)
    git(repo, "commit", "-qam", "r-extract-fn")
    git(repo, "checkout", "-q", "main")
    venv = repo / ".venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
         "--disable-pip-version-check", "pytest", "-e", str(repo)],
        check=True,
    )  # fmt: skip
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--python", default=None)
    args = parser.parse_args()
    python = (
        args.python
        or subprocess.run(
            ["sh", str(REPO / "scripts" / "find-python")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[0]
    )
    work = args.work or Path(tempfile.mkdtemp(prefix="xmltodict-pr-"))
    repo = build(work, python)
    diffgenome = str(REPO / ".venv" / "bin" / "diffgenome")
    pairs = [
        ("HEAD~1", "HEAD", "the release 0.14.1 -> 0.14.2 (on main)"),
        ("main", "pr~3", "pr 1: the fix and its test"),
        ("pr~3", "pr~2", "pr 2: the helper extracted, a local renamed"),
        ("pr~2", "pr~1", "pr 3: a new test with a mock"),
        ("pr~1", "pr", "pr 4: a print moved"),
        ("main", "pr", "the whole pull request"),
        *(("main", name, name) for name in [*REFACTORS, "r-extract-fn"]),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIFFGENOME_")}
    for base, head, what in pairs:
        done = subprocess.run(
            [diffgenome, "diff", base, head, "--python", "../.venv/bin/python"],
            cwd=repo / "tests",
            capture_output=True,
            text=True,
            env=env,
        )
        first = done.stdout.splitlines()[0] if done.stdout else done.stderr.strip()[-300:]
        print(f"{what}: exit {done.returncode}\n    {first}")
    print(f"repository: {repo}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
