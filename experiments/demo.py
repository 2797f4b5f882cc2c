"""`make demo`: a two-commit `diffgenome diff` of the bundled example project.

Builds a temporary git repository with tests/projects/shop as the first commit and
experiments/demo/shop_v2/ copied over it as the second: a discount tier moved (a decision
and a result change), a new helper call, a new exception type, and a payment gateway whose
`charge` changed while a test still replaces it with `create_autospec` (mock drift). Then it
runs `diffgenome diff HEAD~1 HEAD` there with this interpreter and prints the report.
Everything shown is recorded, nothing is made up.

`--html DIR` also writes the HTML report there; `--screenshot PNG` then takes pictures of its
index and of one test's page with headless Chromium (how docs/html-report*.png are made:
`python experiments/demo.py --html /tmp/demo-html --screenshot docs/html-report.png`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "projects" / "shop"
SECOND = ROOT / "experiments" / "demo" / "shop_v2"
GIT = ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.invalid"]
GIT += ["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
PYTEST_ARGS = ("-q", "-p", "no:randomly", "-p", "no:hypothesispytest")


def git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def run(*args: str, cwd: Path, env: dict[str, str]) -> int:
    print(f"\n$ {' '.join(args)}", flush=True)
    return subprocess.run(args, cwd=cwd, env=env, check=False).returncode


def screenshot(site: Path, png: Path) -> int:
    """Pictures of the report's index (``png``) and of the mocked checkout's page
    (``<png stem>-test.png``)."""
    browser = next(
        (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))),
        None,
    )
    if browser is None:
        print("demo: no chromium on PATH for --screenshot", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from diffgenome.analysis.report.html import page_name

    test = page_name("tests/test_payment.py::test_checkout_with_mocked_gateway")
    shots = {site / "index.html": png, site / test: png.with_name(f"{png.stem}-test.png")}
    for page, out in shots.items():
        with tempfile.TemporaryDirectory(prefix="demo-chromium-") as profile:
            command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
            command += [f"--user-data-dir={profile}", "--window-size=1280,1000"]
            command += [f"--screenshot={out.resolve()}", page.resolve().as_uri()]
            done = subprocess.run(command, capture_output=True, check=False)
        if done.returncode != 0:
            print(f"demo: chromium failed on {page}", file=sys.stderr)
            return done.returncode
        print(f"demo: screenshot of {page} in {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", metavar="DIR", help="also write the HTML report to DIR")
    parser.add_argument("--screenshot", metavar="PNG", help="picture of the report's index")
    args = parser.parse_args()
    html = ["--html", os.path.abspath(args.html)] if args.html else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DIFFGENOME_"))}
    env.update({"COLUMNS": "110", "PYTHONDONTWRITEBYTECODE": "1"})
    with tempfile.TemporaryDirectory(prefix="diffgenome-demo-") as tmp:
        project = Path(tmp) / "shop"
        ignore = shutil.ignore_patterns("__pycache__", ".diffgenome", ".pytest_cache")
        shutil.copytree(EXAMPLE, project, ignore=ignore)
        git("init", "-q", cwd=project)
        git("add", "-A", cwd=project)
        git("commit", "-qm", "shop as it was", cwd=project)
        shutil.copytree(SECOND, project, ignore=ignore, dirs_exist_ok=True)
        git("add", "-A", cwd=project)
        git("commit", "-qm", "new tiers, a rounding helper, InvalidQuantity, currency", cwd=project)
        cli = [sys.executable, "-m", "diffgenome.analysis.cli"]
        code = run(*cli, "diff", "HEAD~1", "HEAD", *html, "--", *PYTEST_ARGS, cwd=project, env=env)
        if code not in (0, 1):
            return code
        print(f"\n(exit status {code}: 1 means that behaviour changed)")
    if args.html and args.screenshot:
        return screenshot(Path(args.html), Path(args.screenshot))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
