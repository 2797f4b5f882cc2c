"""Sensitivity: first-order mutants of one project, each recorded and diffed against its base.

Mutation points come from ``ast`` (comparison operators, ``if``/``while``/conditional-expression
conditions, arithmetic operators, integer constants); each mutant is exactly one textual splice
at the node's byte offsets in the original file. Every mutant runs in a scratch copy of the
project's tree (one per worker, ``PYTHONPATH`` pointing at the copy's ``src/``), recorded with
only the test file of the mutated module, into the worker's store, and diffed with
``diffgenome diff BASE_RUN MUTANT_RUN --json -``. The base is recorded twice per module and
worker: a change the two base runs already show (same test, kind, phase, path, site) is
unstable and not counted, as ``diffgenome diff --repeat`` would treat it.
"""

from __future__ import annotations

import ast
import random
import shutil
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.envs import Env, log

from diffgenome.store.layout import open_store
from diffgenome.store.retention import set_keep_runs
from truth.common import WORK, diff, document, env_for, record, save

# Module (under the source root) -> its own test file. packaging: utils and markers are fast.
TARGETS = {
    "packaging": {
        "src/packaging/utils.py": "tests/test_utils.py",
        "src/packaging/markers.py": "tests/test_markers.py",
    },
    # #29: a project whose code writes files and logs (packaging's rarely does): the effects
    # (files written, log records, output) are what a mutant there may change alone.
    # (A value may name several test files, separated by spaces.)
    "cookiecutter": {
        "cookiecutter/generate.py": (
            "tests/test_generate_files.py tests/test_generate_file.py "
            "tests/test_generate_context.py"
        ),
    },
}
# #29: the change kinds of the effects (analysis/diff/effects.py EFFECT_KINDS), spelled out so
# that the harness also runs against a product from before the effects (which has no module).
EFFECT_KINDS = frozenset(
    ("output_changed", "log_changed", "warning_changed", "file_changed", "environ_changed")
)
# --module-level: modules with module-level code that operators can mutate, and their tests.
MODULE_LEVEL_TARGETS = {
    "packaging": {
        "src/packaging/_manylinux.py": "tests/test_manylinux.py",
        "src/packaging/_musllinux.py": "tests/test_musllinux.py",
        "src/packaging/errors.py": "tests/test_errors.py",
        "src/packaging/markers.py": "tests/test_markers.py",
        "src/packaging/metadata.py": "tests/test_metadata.py",
        "src/packaging/_tokenizer.py": "tests/test_requirements.py",
        "src/packaging/utils.py": "tests/test_utils.py",
    },
}
COMPARE_SWAP = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
}
BINOP_SWAP = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "//"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"),
    ast.Mod: ("%", "//"),
    ast.BitOr: ("|", "&"),
    ast.BitAnd: ("&", "|"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
    ast.Pow: ("**", "*"),
}


@dataclass
class Mutant:
    id: str
    file: str
    tests: str
    operator: str  # compare | negate | arith | int
    symbol: str  # py:<module>.<qualname> enclosing the point, or the module
    line: int
    before: str
    after: str
    start: int  # byte offsets into the original file
    end: int

    def apply(self, original: bytes) -> bytes:
        return original[: self.start] + self.after.encode() + original[self.end :]


def mutation_points(source: bytes, file: str, tests: str, module: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col  # ast columns are UTF-8 byte offsets

    out: list[Mutant] = []

    def add(op: str, scope: str, node: ast.AST, start: int, end: int, after: str) -> None:
        before = source[start:end].decode()
        mutated = source[:start] + after.encode() + source[end:]
        try:
            ast.parse(mutated)
        except SyntaxError:
            return
        lineno = getattr(node, "lineno", 0)
        out.append(Mutant("", file, tests, op, f"py:{scope}", lineno, before, after, start, end))

    def between(a: ast.AST, b: ast.AST, token: str) -> tuple[int, int] | None:
        lo = offset(a.end_lineno or 0, a.end_col_offset or 0)
        hi = offset(b.lineno, b.col_offset)
        gap = source[lo:hi].decode()
        words = gap.replace("(", " ").replace(")", " ").split()
        if " ".join(words) != token:  # comments or odd spacing: not a clean single token
            return None
        index = gap.index(token.split()[0])
        return lo + len(gap[:index].encode()), lo + len(gap[: index + len(token)].encode())

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = f"{scope}.{node.name}" if scope != module else f"{module}.{node.name}"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for default in [*node.args.defaults, *node.args.kw_defaults]:
                    if default is not None:
                        visit(default, scope)
                for stmt in node.body:
                    visit(stmt, inner)
                return
            for stmt in node.body:
                visit(stmt, inner)
            return
        if isinstance(node, ast.AnnAssign):  # annotations are not behaviour
            if node.value is not None:
                visit(node.value, scope)
            return
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                token, repl = COMPARE_SWAP[type(op)]
                span = between(operands[i], operands[i + 1], token)
                if span:
                    add("compare", scope, node, *span, repl)
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAP:
            token, repl = BINOP_SWAP[type(node.op)]
            span = between(node.left, node.right, token)
            if span:
                add("arith", scope, node, *span, repl)
        elif isinstance(node, ast.If | ast.While | ast.IfExp):
            test = node.test
            if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
                return  # typing-only imports: not behaviour
            start = offset(test.lineno, test.col_offset)
            end = offset(test.end_lineno or 0, test.end_col_offset or 0)
            add("negate", scope, test, start, end, f"not ({source[start:end].decode()})")
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and node.end_lineno == node.lineno
        ):
            start = offset(node.lineno, node.col_offset)
            end = offset(node.lineno, node.end_col_offset or 0)
            if source[start:end].decode().isdigit():
                add("int", scope, node, start, end, str(node.value + 1))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    for stmt in tree.body:
        visit(stmt, module)
    for mutant in out:
        mutant.id = f"{Path(file).stem}:{mutant.line}:{mutant.operator}:{mutant.start}"
    return out


def _module_name(file: str) -> str:
    parts = Path(file).with_suffix("").parts
    return ".".join(parts[1:] if parts[0] == "src" else parts)


def select(
    project: str, limit: int, seed: int, root: Path, module_level: bool = False
) -> list[Mutant]:
    """Every point of the first module, then a seeded sample of the others up to ``limit``;
    with ``module_level``, only points in module-level code (constants, tables, regexes)."""
    chosen: list[Mutant] = []
    targets = MODULE_LEVEL_TARGETS if module_level else TARGETS
    for file, tests in targets[project].items():
        module = _module_name(file)
        points = mutation_points((root / file).read_bytes(), file, tests, module)
        if module_level:
            points = [m for m in points if m.symbol == f"py:{module}"]
        room = limit - len(chosen)
        if room <= 0:
            break
        if len(points) > room:
            points = sorted(random.Random(seed).sample(points, room), key=lambda m: m.start)
        chosen += points
    return chosen


def _copy(env: Env, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        env.tree,
        dest,
        ignore=shutil.ignore_patterns("__pycache__", ".diffgenome", ".hypothesis", "*.egg-info"),
    )
    return dest


def noisy_tests(project: str, targets: dict[str, str]) -> dict[str, Any]:
    """Per target test file, the tests that are not ``unchanged`` between a commit and a new
    commit of the same tree (``truth.py identical``'s setup, restricted to that file): a
    mutant counts as detected only through the other, quiet, tests."""
    from truth.history import HISTORY, run_diff, summarise
    from truth.identical import prepare

    env = env_for(project)
    # Its own clone: `truth.py identical` of the same project may run meanwhile.
    repo = prepare(project, HISTORY / "identical" / project / "repo-mutants")
    out: dict[str, Any] = {}
    for tests in sorted(set(targets.values())):
        log(f"mutants: identical-tree control of {tests}")
        args = [*env.project.pytest_args, *tests.split()]
        folder = HISTORY / "identical" / project / f"mutants-{Path(tests).stem}"
        done = run_diff(repo, env.exe, args, folder)
        if done.document is None:
            raise RuntimeError(f"identical-tree control failed: {done.stderr_tail}")
        summary = summarise(done.document)
        out[tests] = {
            "exit_code": done.exit_code,
            "statuses": summary["statuses"],
            "noisy": sorted(t["test"] for t in summary["reported"]),
        }
    return out


def run(
    project: str,
    *,
    limit: int,
    jobs: int,
    seed: int,
    module_level: bool = False,
    tag: str = "",
) -> dict[str, Any]:
    env = env_for(project)
    mutants = select(project, limit, seed, env.tree, module_level)
    targets = (MODULE_LEVEL_TARGETS if module_level else TARGETS)[project]
    quiet_control = noisy_tests(project, targets)
    noisy = {f: set(v["noisy"]) for f, v in quiet_control.items()}
    log(f"mutants: {len(mutants)} mutants of {project}, {jobs} workers")
    workers = [_copy(env, WORK / "mutants" / project / f"worker-{i}") for i in range(jobs)]
    started = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        chunks = [mutants[i::jobs] for i in range(jobs)]
        parts = list(
            pool.map(
                lambda args: _worker(env, *args, noisy=noisy),
                zip(workers, chunks, strict=True),
            )
        )
    results = [r for part in parts for r in part[0]]
    bases = {k: v for part in parts for k, v in part[1].items()}
    results.sort(key=lambda r: (r["file"], r["start"]))
    summary = summarise(results) | {
        "project": f"{env.project.name} {env.project.version}",
        "python": env.python.version,
        "seed": seed,
        "targets": targets,
        "bases": bases,
        "identical_tree_control": quiet_control,
        "wall_s": round(time.monotonic() - started, 1),
        "module_level": module_level,
    }
    name = "mutants-module-level" if module_level else "mutants"
    if project != "packaging":
        name += f"-{project}"
    name += f"-{tag}" if tag else ""
    save(name, summary | {"mutants": results})
    write_result(summary, results, name)
    return summary


def write_result(
    summary: dict[str, Any], results: list[dict[str, Any]], tag: str = "mutants"
) -> None:
    """experiments/results/truth-DATE-<tag>.{json,md}: both counts side by side, and how safe
    ``diffgenome affected``'s selection was."""
    import json

    from truth.history import diffgenome_commit, results_path

    keep = ("id", "symbol", "operator", "line", "before", "after", "verdict", "verdict_quiet")
    keep += ("changed_tests", "quiet_changed_tests", "killed_tests", "quiet_killed_tests")
    keep += ("selected", "selected_tests", "killed_not_selected", "changed_not_selected")
    keep += ("verdict_quiet_no_effects", "quiet_changed_no_effects", "change_kinds")
    rows = [{k: r.get(k) for k in keep} for r in results]
    data = summary | {"diffgenome_commit": diffgenome_commit(), "mutants": rows}
    path = results_path(tag, "", "json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    n = summary["total"]
    out = [f"# Mutants of {summary['project']}, detection through quiet tests", ""]
    out += [
        f"diffgenome `{data['diffgenome_commit']}`; {n} mutants; wall {summary['wall_s']} s.",
        "",
        "| count | detected | killed | unchanged |",
        "|---|---:|---:|---:|",
        f"| any test not masked by the base-vs-base control | {summary['detected']} | "
        f"{summary['killed']} | {summary['unchanged']} |",
        f"| only tests quiet on an identical tree | {summary['detected_quiet']} | "
        f"{summary['killed_quiet']} | {len(summary['unchanged_quiet'])} |",
        f"| only quiet tests, effect changes left out (#29) | "
        f"{summary['detected_quiet_no_effects']} | | |",
        "",
        f"Detected through quiet tests only by an effect change (#29): "
        f"{summary['effects_only_quiet'] or 'none'}; of those not killed by the suite: "
        f"{summary['effects_only_not_killed'] or 'none'}.",
        "",
        "With the mutant's code change (as `diffgenome diff` of two revisions reads it), through "
        "quiet tests (#23.2):",
        "",
        "| judged | detected | lost |",
        "|---|---:|---:|",
        f"| on the differences as recorded | {summary['detected_with_code_as_recorded']} | - |",
        f"| with one-sided code contracted (`restructured`) | "
        f"{summary['detected_with_code_contracted']} | {len(summary['lost_by_contraction'])} "
        f"{summary['lost_by_contraction'] or ''} |",
        f"| tests `restructured` over all mutants | {summary['restructured_tests']} | |",
        "",
        f"Identical-tree control per test file: "
        f"{ {k: v['statuses'] for k, v in summary['identical_tree_control'].items()} }.",
        "",
        "`diffgenome affected` against the base recording (the mutant's code change, the "
        "base genomes): a test whose outcome changed must be selected. "
        f"Mutants with a killed test not selected: {summary['affected_unsafe']} of "
        f"{summary['affected_measured']} measured; tests whose genome changed but were not "
        f"selected: {summary['affected_changed_missed']}; mean share of the test file "
        f"selected: {summary['affected_mean_share']}.",
        "",
        "| mutant | change | verdict | verdict (quiet tests) | changed / quiet changed | "
        "selected / tests | killed not selected |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['id']} | `{_cell(str(r['before']))}` → `{_cell(str(r['after']))}` | "
            f"{r['verdict']} | {r['verdict_quiet']} | {r['changed_tests']} / "
            f"{r['quiet_changed_tests']} | {r.get('selected')} / {r.get('selected_tests')} | "
            f"{len(r.get('killed_not_selected') or [])} |"
        )
    results_path(tag, "", "md").write_text("\n".join(out) + "\n")


def _cell(text: str) -> str:
    text = " ".join(text.split())
    return ((text[:40] + "…") if len(text) > 40 else text).replace("|", "\\|")


def _worker(
    env: Env, root: Path, chunk: list[Mutant], *, noisy: dict[str, set[str]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    store = root / ".diffgenome-truth"
    shutil.rmtree(store, ignore_errors=True)
    # Base runs are diffed by id long after dozens of mutants were recorded: the store's cap
    # (20 runs by default) must not remove them.
    opened = open_store(str(store))
    try:
        set_keep_runs(opened.conn, 0)
    finally:
        opened.conn.close()
    # No bytecode at all: a mutant of the same size written within the same second as the
    # previous version would otherwise run from the stale .pyc (mtime and size both match).
    extra = {
        "PYTHONPATH": str(root / "src") if (root / "src").is_dir() else str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for cache in root.rglob("__pycache__"):
        shutil.rmtree(cache)
    bases: dict[str, dict[str, Any]] = {}
    results = []
    for mutant in chunk:
        if mutant.file not in bases:
            bases[mutant.file] = _base(env, root, store, mutant.tests, extra)
        base = bases[mutant.file]
        path = root / mutant.file
        original = path.read_bytes()
        path.write_bytes(mutant.apply(original))
        try:
            result = _one(env, root, store, mutant, base, extra, noisy.get(mutant.tests, set()))
        finally:
            path.write_bytes(original)
        if result["verdict"] == "killed:timeout":
            results.append(result)  # which test hung is unknown: no selection measured
            log(f"mutant {mutant.id}: timeout")
            continue
        result["with_code_changes"] = _code_verdicts(
            mutant,
            original,
            base,
            document(store, result["run"]),
            root,
            noisy.get(mutant.tests, set()),
        )
        selected = _selection(mutant, original, base["doc"], root)
        if result["verdict"] == "killed:collection":  # every test of the file errors
            everyone = {t["id"] for t in base["doc"]["tests"] if t["id"] != "<import>"}
            result["killed_ids"] = result["changed_ids"] = sorted(everyone)
        killed = set(result.get("killed_ids") or ())
        result["selected"] = len(selected)
        result["selected_tests"] = sum(1 for t in base["doc"]["tests"] if t["id"] != "<import>")
        result["killed_not_selected"] = sorted(killed - selected - {"<import>"})
        changed = set(result.get("changed_ids") or ()) - {"<import>"}
        result["changed_not_selected"] = sorted(changed - selected)
        log(
            f"mutant {mutant.id} {mutant.before!r}->{mutant.after!r}: {result['verdict']} "
            f"({result.get('changed_tests')} tests, masked {result.get('masked_by_control')})"
        )
        results.append(result)
    return results, {f"{root.name}:{k}": _public(v) for k, v in bases.items()}


def _public(base: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in base.items() if k not in ("called", "doc")}


def _code_changes(mutant: Mutant, original: bytes, base_doc: dict[str, Any], root: Path) -> Any:
    """The mutant's code change as ``diffgenome diff`` of two revisions reads it."""
    from diffgenome.analysis.diff.codechanges import code_changes_from_sources
    from diffgenome.analysis.diff.modules import module_namer

    module_of = module_namer([base_doc])

    def importers(names: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in root.rglob("*.py"):
            rel = str(path.relative_to(root))
            if rel == mutant.file or module_of(rel) is None:
                continue
            text = path.read_text(errors="replace")
            if any(name in text for name in names):
                out[rel] = text
        return out

    return code_changes_from_sources(
        {mutant.file: original.decode()},
        {mutant.file: mutant.apply(original).decode()},
        module_of,
        importers,
    )


def _code_verdicts(
    mutant: Mutant,
    original: bytes,
    base: dict[str, Any],
    mutant_doc: dict[str, Any],
    root: Path,
    noisy: set[str],
) -> dict[str, Any]:
    """#23.2: the mutant diffed as two revisions are (with the code change), once judged on
    the differences as recorded and once with one-sided code contracted (``restructured``):
    detection, through tests quiet on an identical tree, must not drop."""
    from diffgenome.analysis.diff.document import diff_documents

    code = _code_changes(mutant, original, base["doc"], root)
    unstable = set(base["control_changes"])
    out: dict[str, Any] = {}
    for name, contract in (("as_recorded", False), ("contracted", True)):
        doc = diff_documents(
            base["doc"],
            mutant_doc,
            base_rev="base",
            head_rev="mutant",
            code_changes=code,
            contract=contract,
        ).model_dump(mode="json")
        loud = []
        for test in doc["tests"]:
            if test["id"] in noisy or test["status"] not in ("changed", "unverified"):
                continue
            if test["status"] == "unverified" and not test["may_hide_change"]:
                continue
            own = [c for c in test["changes"] if _key(test["id"], c) not in unstable]
            if own or test["status"] == "unverified":
                loud.append(test["id"])
        out[name] = {
            "detected": bool(loud),
            "loud_tests": len(loud),
            "restructured": doc["summary"].get("restructured", 0),
        }
    return out


def _selection(mutant: Mutant, original: bytes, base_doc: dict[str, Any], root: Path) -> set[str]:
    """What ``diffgenome affected`` selects for this mutant from the base recording: the
    same functions the CLI calls, given the two versions of the one changed file and the
    project's other files (where a changed module-level name may be imported)."""
    from diffgenome.analysis.diff.affected import affected_tests
    from diffgenome.analysis.diff.codechanges import code_changes_from_sources
    from diffgenome.analysis.diff.modules import module_namer

    module_of = module_namer([base_doc])

    def importers(names: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in root.rglob("*.py"):
            rel = str(path.relative_to(root))
            if rel == mutant.file or module_of(rel) is None:
                continue
            text = path.read_text(errors="replace")
            if any(name in text for name in names):
                out[rel] = text
        return out

    code = code_changes_from_sources(
        {mutant.file: original.decode()},
        {mutant.file: mutant.apply(original).decode()},
        module_of,
        importers,
    )
    return {found.test for found in affected_tests(base_doc, code, module_of)}


def _base(env: Env, root: Path, store: Path, tests: str, extra: dict[str, str]) -> dict[str, Any]:
    args = [*env.project.pytest_args, *tests.split()]  # cookiecutter's: no --cov addopts
    first = record(env, store, args, cwd=root, extra_env=extra)
    second = record(env, store, args, cwd=root, extra_env=extra)
    control = diff(store, first.run_id, second.run_id, root)
    unstable = sorted(_key(t["id"], c) for t in control["tests"] for c in t.get("changes", []))
    doc = document(store, first.run_id)
    called: set[str] = set()
    for test in doc["tests"]:
        for phase in test.get("phases", {}).values():
            called.update(n["symbol"] for n in phase.get("nodes", []) if n["type"] == "call")
    foreign = sorted({r for t in doc["tests"] for r in t.get("unverified_reasons", [])})
    return {
        "run": first.run_id,
        "tests": len(doc["tests"]),
        "wall_s": round(first.wall_s, 2),
        "control_changes": unstable,
        "control_tests": sorted({k.split("|", 1)[0] for k in unstable}),
        "unverified_reasons": foreign,
        "called": sorted(called),
        "doc": doc,
    }


def _one(
    env: Env,
    root: Path,
    store: Path,
    mutant: Mutant,
    base: dict[str, Any],
    extra: dict[str, str],
    noisy: set[str],
) -> dict[str, Any]:
    result: dict[str, Any] = asdict(mutant)
    reached = any(s == mutant.symbol or s.startswith(mutant.symbol + ".") for s in base["called"])
    result["reached"] = reached or mutant.symbol == f"py:{_module_name(mutant.file)}"
    timeout = max(60.0, 10 * base["wall_s"])
    try:
        args = [*env.project.pytest_args, *mutant.tests.split()]
        rec = record(env, store, args, cwd=root, extra_env=extra, timeout=timeout)
    except subprocess.TimeoutExpired:
        return result | {
            "verdict": "killed:timeout",
            "verdict_quiet": "killed:timeout",
            "changed_tests": None,
            "killed": True,
        }
    except RuntimeError as exc:  # pytest 2-5: the mutant broke import or collection
        return result | {
            "verdict": "killed:collection",
            "verdict_quiet": "killed:collection",
            "error": str(exc)[-400:],
            "changed_tests": None,
            "killed": True,
        }
    document = diff(store, base["run"], rec.run_id, root)
    statuses = Counter(t["status"] for t in document["tests"])
    unstable = set(base["control_changes"])
    kinds: Counter[str] = Counter()
    changed = []
    killed_tests = []
    behaviour: set[str] = set()  # tests with a change of another kind than an effect's
    masked = 0
    for test in document["tests"]:
        if test["status"] == "unchanged":
            continue
        own = [c for c in test.get("changes", []) if _key(test["id"], c) not in unstable]
        if test["status"] == "changed" and not own:
            masked += 1  # only differences the two base recordings also showed
            continue
        changed.append(test["id"])
        kinds.update(c["kind"] for c in own)
        if test["status"] != "changed" or any(c["kind"] not in EFFECT_KINDS for c in own):
            behaviour.add(test["id"])
        if any(c["kind"] == "outcome_changed" for c in own):
            killed_tests.append(test["id"])
    killed = bool(killed_tests) or rec.returncode != 0
    verdict = ("killed" if killed else "changed") if changed else "unchanged"
    # Only through tests that are quiet on an identical tree (no noise can stand in for them).
    quiet = [t for t in changed if t not in noisy]
    quiet_killed = [t for t in killed_tests if t not in noisy]
    verdict_quiet = ("killed" if quiet_killed else "changed") if quiet else "unchanged"
    # #29: the same count with the effect kinds left out: what the mutant shows elsewhere.
    quiet_no_effects = [t for t in quiet if t in behaviour]
    verdict_quiet_no_effects = (
        ("killed" if quiet_killed else "changed") if quiet_no_effects else "unchanged"
    )
    return result | {
        "verdict_quiet_no_effects": verdict_quiet_no_effects,
        "quiet_changed_no_effects": len(quiet_no_effects),
        "verdict": verdict,
        "verdict_quiet": verdict_quiet,
        "quiet_changed_tests": len(quiet),
        "quiet_killed_tests": len(quiet_killed),
        "killed": killed,
        "statuses": dict(statuses),
        "changed_tests": len(changed),
        "changed_ids": changed,
        "killed_tests": len(killed_tests),
        "killed_ids": killed_tests,
        "change_kinds": dict(kinds),
        "masked_by_control": masked,
        "run": rec.run_id,
        "wall_s": round(rec.wall_s, 2),
    }


def _key(test: str, change: dict[str, Any]) -> str:
    """A change without its values: what the base-vs-base control may also show (``--repeat``)."""
    path = "/".join(change.get("path", []))
    return f"{test}|{change['kind']}|{change.get('phase')}|{path}|{change.get('site')}"


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(results)
    detected = [r for r in results if r["verdict"] != "unchanged"]
    killed = [r for r in results if r["killed"]]
    silent = [r for r in results if r["verdict"] == "unchanged"]
    return {
        "total": n,
        "by_operator": dict(Counter(r["operator"] for r in results)),
        "detected": len(detected),
        "detected_share": round(len(detected) / n, 4) if n else None,
        "killed": len(killed),
        "killed_share": round(len(killed) / n, 4) if n else None,
        "changed_not_killed": len(detected) - len(killed),
        "unchanged": len(silent),
        "unchanged_unreached": sum(1 for r in silent if not r["reached"]),
        "unchanged_reached": [r["id"] for r in silent if r["reached"]],
        # The genome sees more than the assertions: tests that changed yet still passed.
        "with_changed_passing_test": sum(1 for r in detected if _passing(r) > 0),
        "changed_passing_tests": sum(_passing(r) for r in detected),
        "timeouts": [r["id"] for r in results if r["verdict"] == "killed:timeout"],
        # Counting only tests that are quiet on an identical tree (truth.py identical).
        "detected_quiet": sum(
            1 for r in results if r.get("verdict_quiet", "unchanged") != "unchanged"
        ),
        "killed_quiet": sum(1 for r in results if str(r.get("verdict_quiet")).startswith("killed")),
        "unchanged_quiet": [r["id"] for r in results if r.get("verdict_quiet") == "unchanged"],
        # #29: detection through quiet tests when the effect kinds are left out, and the
        # mutants only an effect change shows (a timeout or a collection error is neither).
        "detected_quiet_no_effects": sum(
            1
            for r in results
            if r.get("verdict_quiet_no_effects", r.get("verdict_quiet", "unchanged")) != "unchanged"
        ),
        "effects_only_quiet": [r["id"] for r in results if _effects_only(r)],
        "effects_only_not_killed": [
            r["id"] for r in results if _effects_only(r) and not r["killed"]
        ],
        # #23.2: with the code change, as recorded vs with one-sided code contracted (a mutant
        # killed by a timeout or at collection counts as detected either way).
        "detected_with_code_as_recorded": sum(
            1 for r in results if _code_detected(r, "as_recorded")
        ),
        "detected_with_code_contracted": sum(1 for r in results if _code_detected(r, "contracted")),
        "lost_by_contraction": [
            r["id"]
            for r in results
            if _code_detected(r, "as_recorded") and not _code_detected(r, "contracted")
        ],
        "restructured_tests": sum(
            (r.get("with_code_changes") or {}).get("contracted", {}).get("restructured", 0)
            for r in results
        ),
        # diffgenome affected (#10.6): a killed test must be selected.
        "affected_measured": sum(1 for r in results if "selected" in r),
        "affected_unsafe": sum(1 for r in results if r.get("killed_not_selected")),
        "affected_changed_missed": sum(len(r.get("changed_not_selected") or []) for r in results),
        "affected_mean_share": (
            round(
                sum(r["selected"] / max(1, r["selected_tests"]) for r in results if "selected" in r)
                / max(1, sum(1 for r in results if "selected" in r)),
                4,
            )
        ),
    }


def _effects_only(result: dict[str, Any]) -> bool:
    return (
        result.get("verdict_quiet", "unchanged") != "unchanged"
        and result.get("verdict_quiet_no_effects", result.get("verdict_quiet")) == "unchanged"
    )


def _code_detected(result: dict[str, Any], how: str) -> bool:
    verdicts = result.get("with_code_changes")
    if verdicts is None:
        return str(result.get("verdict", "")).startswith("killed")
    return bool(verdicts[how]["detected"])


def _passing(result: dict[str, Any]) -> int:
    return (result.get("changed_tests") or 0) - (result.get("killed_tests") or 0)
