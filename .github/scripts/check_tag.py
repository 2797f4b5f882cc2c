"""Refuse to publish a tag that is not the version being published.

The publish job of .github/workflows/wheels.yml runs this first, with the pushed tag
(``GITHUB_REF_NAME``): the release ``v<version>`` must carry ``diffgenome.__version__`` (what
the sdist and wheels are named and versioned by), so that a mistyped or early tag never
uploads artifacts under another version's name. The version is read from the source, not
imported. Standard library only; exits 1 with one line when they differ.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

INIT = Path(__file__).resolve().parents[2] / "diffgenome" / "__init__.py"


def version(init: Path = INIT) -> str | None:
    """``__version__`` as ``diffgenome/__init__.py`` assigns it (a string literal)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign):
            continue
        named = any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
        if named and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("check_tag: usage: check_tag.py TAG (e.g. v0.1.0)", file=sys.stderr)
        return 2
    tag = argv[0].removeprefix("refs/tags/")
    found = version()
    if found is None:
        print(f"check_tag: FAILED: no __version__ string in {INIT}", file=sys.stderr)
        return 1
    if tag != f"v{found}":
        print(
            f"check_tag: FAILED: the tag {tag} is not the version being published "
            f"(diffgenome.__version__ is {found}: tag v{found}, or change the version)",
            file=sys.stderr,
        )
        return 1
    print(f"check_tag: ok: {tag} is diffgenome {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
