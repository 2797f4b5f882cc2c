"""Join the raw results under experiments/work/truth/ into experiments/results/truth-DATE.*.

The explanations below were written by reading the changed tests' sources and the mutants: they
are evidence judged by a person, kept next to the numbers they explain. A cause is matched by
a substring of the changed symbol (or of the stand-in / OS event path element).
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench.envs import REPO_ROOT, log

from truth.common import RESULTS, load
from truth.mutants import summarise as summarise_mutants
from truth.stability import outcomes, summarise

# symbol substring -> cause of a difference between two recordings of one commit
CAUSES: tuple[tuple[str, str], ...] = (
    ("__hash__", "hash seed: str hashes differ per process (PYTHONHASHSEED)"),
    ("Credentials.scopes", "hash seed: scopes passed as a set, iterated in hash order"),
    ("Credentials.to_json", "hash seed: scopes passed as a set, iterated in hash order"),
    ("__del__", "gc: a finalizer runs in whichever test triggers the collection"),
    ("_mtls_helper", "temp path: tempfile.mkstemp() certificate/key files"),
    ("_regional_access_boundary", "time: regional access boundary refresh from the clock"),
    ("AsyncAuthorizedSession.request", "time: the remaining timeout (monotonic clock) passed on"),
    ("AuthorizedSession.request", "time: the remaining timeout (monotonic clock) passed on"),
    ("func_with_timeout", "time: the remaining timeout (monotonic clock) passed on"),
    ("stand-in[fake ?", "random: tests/unit/test_rest_streaming*.py seed random with time()"),
    ("stand-in[mock_object ?", "threads: the background consumer thread's timing"),
    ("_make_authorization_grant_assertion", "time: JWT assertions built from the clock"),
    ("make_request", "time: JWT assertions built from the clock"),
    ("make_mock_re", "time: JWT assertions built from the clock"),
    ("_token_endpoint_request", "time: JWT assertions built from the clock"),
    ("id_token", "time: JWT assertions built from the clock"),
    ("iam.Signer", "time: JWT assertions built from the clock"),
    ("transport.Request", "time: JWT assertions built from the clock"),
    ("Credentials.apply", "time: JWT assertions built from the clock"),
    ("Credentials._apply", "time: JWT assertions built from the clock"),
    ("uuid4", "random: uuid.uuid4() in the template extension"),
    ("random_ascii_string", "random: random.choice in the template extension"),
    ("zipfile.unzip", "temp path: unzip extracts into tempfile.mkdtemp()"),
    ("hooks.run_script", "temp path: the hook is copied to a tempfile.mkstemp() script"),
    ("make_executable", "temp path: the hook is copied to a tempfile.mkstemp() script"),
    ("subprocess.Popen", "temp path: the hook is copied to a tempfile.mkstemp() script"),
    ("_rest_streaming_base", "random: tests/unit/test_rest_streaming*.py seed random with time()"),
    ("rest_streaming", "random: tests/unit/test_rest_streaming*.py seed random with time()"),
    ("ResponseMock", "random: tests/unit/test_rest_streaming*.py seed random with time()"),
    ("retry", "random: retry jitter (random.uniform) and time.monotonic() deadlines"),
    ("sleep", "random: retry jitter (random.uniform) passed to the mocked sleep"),
    ("resumable_transfer", "time: stall control and deadlines read time.monotonic()"),
    ("exceptions", "time/random: messages embed the retry deadline or last delay"),
    ("client_logging", "time: log records carry a timestamp"),
    ("bidi", "threads: the background consumer thread's timing"),
    ("_helpers", "time: JWT iat/exp from the clock (datetime_to_secs, to_bytes, b64)"),
    ("jwt", "time: JWT iat/exp from the clock"),
    ("crypt", "time: signing a payload that contains iat/exp"),
    ("_remaining_time", "time: time.monotonic() in timeout_guard"),
    ("timeout_guard", "time: time.monotonic() in timeout_guard"),
    ("_exponential_backoff", "random: backoff jitter (random.uniform)"),
    ("token_factory", "time: test tokens built from the clock"),
)


TMP = "temp path: pytest tmp_path (/tmp/pytest-of-USER/pytest-N/), see the --basetemp pair"


def cause_of(symbol: str) -> str:
    for needle, cause in CAUSES:
        if needle in symbol:
            return cause
    return "unexplained"


def _git_head() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    return out.stdout.strip()


def _causes(stability: dict[str, Any]) -> dict[str, int]:
    """Tests per cause; a test counts once per cause its changes show."""
    found: Counter[str] = Counter()
    for test in stability["changed_tests"]:
        causes = {
            cause_of(c.get("symbol") or str(c.get("path", [""])[-1])) for c in test["changes"]
        }
        found.update(causes)
    return dict(found.most_common())


def run() -> None:
    today = datetime.date.today().isoformat()
    stability = load("stability") or {}
    stability_bt = load("stability-basetemp") or {}
    for variant, table in (("", stability), ("-basetemp", stability_bt)):
        for name, data in table.items():  # re-summarised from the saved diffs
            full = load(f"stability{variant}-{name}")
            data.update(summarise(full["diff"]))
            if "outcomes" not in data:
                data["outcomes"] = [outcomes(Path(data["store"]), run) for run in data["runs"]]
    mutants = load("mutants")
    census = load("census") or {}
    if mutants:
        mutants.update(summarise_mutants(mutants["mutants"]))
    for data in stability_bt.values():
        data["causes"] = _causes(data)
    for name, data in stability.items():
        controlled = {t["test"] for t in stability_bt.get(name, {}).get("changed_tests", [])}
        data["changed_only_without_basetemp"] = sum(
            1 for t in data["changed_tests"] if t["test"] not in controlled
        )
    _slim(stability, stability_bt, mutants)
    result = {
        "format": "diffgenome-truth/1",
        "date": today,
        "diffgenome_commit": _git_head(),
        "stability": stability,
        "stability_basetemp": stability_bt,
        "mutants": mutants,
        "census": census,
        "prototype_resolved_share": 0.42,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"truth-{today}.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    (RESULTS / f"truth-{today}.md").write_text(markdown(result))
    log(f"wrote {RESULTS / f'truth-{today}.md'} and .json")


def _slim(*tables: Any) -> None:
    """Keep the result file reviewable: per test its kinds and causes, not the values."""
    for index, table in enumerate(tables[:2]):
        for data in table.values():
            data["changed_tests"] = [
                {
                    "test": t["test"],
                    "status": t["status"],
                    "kinds": t["kinds"],
                    "causes": sorted(
                        {cause_of(c.get("symbol") or str(c["path"][-1:])) for c in t["changes"]}
                    ),
                }
                for t in data["changed_tests"]
            ]
            if index == 0:  # without --basetemp: what the basetemp pair lacks is tmp_path
                for t in data["changed_tests"]:
                    t["causes"] = [TMP if c == "unexplained" else c for c in t["causes"]]
    if tables[2]:
        for base in tables[2]["bases"].values():
            base["control_changes"] = len(base["control_changes"])


def markdown(r: dict[str, Any]) -> str:
    out = [f"# Truth of the diff (#5.4), {r['date']}", ""]
    out += [f"diffgenome at `{r['diffgenome_commit']}`, Python 3.12, experiments/truth.py.", ""]
    out += ["## Stability: one commit recorded twice", ""]
    out += [
        "| project | tests | changed | changed with fixed `--basetemp` | unverified "
        "| unchanged (fixed basetemp) | outcomes equal | causes of the residual changes |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, data in r["stability"].items():
        bt = r["stability_basetemp"].get(name)
        st = data["statuses"]
        bst = bt["statuses"] if bt else {}
        same = bt and bt["outcomes"][0] == bt["outcomes"][1]
        causes = "; ".join(f"{k} ({v})" for k, v in (bt or {}).get("causes", {}).items())
        out.append(
            f"| {name} | {data['tests']} | {st.get('changed', 0)} | "
            f"{bst.get('changed', '-') if bt else '-'} | {st.get('unverified', 0)} | "
            f"{bst.get('unchanged', '-') if bt else '-'} | {'yes' if same else '?'} | {causes} |"
        )
    out += ["", "Unverified reasons (tests, per side; default run):", ""]
    for name, data in r["stability"].items():
        reasons = ", ".join(f"{k} {v}" for k, v in data["unverified_reasons"].items())
        out.append(f"- {name}: {reasons or 'none'}")
    m = r["mutants"]
    if m:
        out += ["", f"## Sensitivity: {m['total']} mutants of {m['project']}", ""]
        out += [
            "| mutants | diff shows a change | killed by the suite | changed, not killed "
            "| with a changed test that still passed | unchanged: not reached "
            "| unchanged: reached |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {m['total']} | {m['detected']} ({m['detected_share']:.0%}) | {m['killed']} "
            f"({m['killed_share']:.0%}) | {m['changed_not_killed']} | "
            f"{m['with_changed_passing_test']} ({m['changed_passing_tests']} tests) | "
            f"{m['unchanged_unreached']} | {len(m['unchanged_reached'])} |",
            "",
            f"Operators: {m['by_operator']}. Targets: {m['targets']}. Wall {m['wall_s']} s.",
            "",
            "| mutant | line | change | verdict | changed tests | killed tests | kinds |",
            "|---|---:|---|---|---:|---:|---|",
        ]
        for x in m["mutants"]:
            change = f"`{_cell(x['before'])}` → `{_cell(x['after'])}`"
            out.append(
                f"| {x['symbol']} | {x['file'].rsplit('/', 1)[-1]}:{x['line']} | {change} | "
                f"{x['verdict']} | {x.get('changed_tests')} | {x.get('killed_tests', '-')} | "
                f"{', '.join(sorted(x.get('change_kinds', {})))} |"
            )
    out += ["", "## Stand-in census", ""]
    out += [
        "| project | tests | tests with stand-ins | stand-ins | by mechanism | by relation "
        "| claimed_target resolved | of those, project code | root stand-ins resolved "
        "| signature mismatch |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for name, c in r["census"].items():
        out.append(
            f"| {name} | {c['tests']} | {c['tests_with_stand_ins']} | {c['nodes']} | "
            f"{_counts(c['by_mechanism'])} | {_counts(c['by_relation'])} | "
            f"{c['resolved']} ({c['resolved_share']:.0%}) | {c['resolved_own_project']} | "
            f"{c['root_resolved']}/{c['root_nodes']} ({c['root_resolved_share']:.0%}) | "
            f"{c['signature_mismatch']} |"
        )
    out += [
        "",
        f"Earlier public prototype: {r['prototype_resolved_share']:.0%} on a FastAPI suite.",
        "",
        "Explanations of every anomaly: docs/experiments.md.",
        "",
    ]
    return "\n".join(out)


def _cell(text: str) -> str:
    text = " ".join(text.split())
    text = (text[:50] + "…") if len(text) > 50 else text
    return text.replace("|", "\\|")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())
