"""(#29, session 10) Partial mutant results from a worker's store while the harness runs.

    python experiments/truth/partial.py WORKER/.diffgenome-truth LOG > partial.json

The k-th complete non-base run of a module is its k-th finished mutant in the harness's log
(timeouts leave incomplete runs). The rules of truth/mutants.py ``_one``: the base-vs-base
control masks, quiet = not noisy (``<import>``, the only test not unchanged on an identical
tree for packaging), killed = an ``outcome_changed`` (pytest's exit status is not known here).
"""

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diffgenome.store.reader import StoreReader
from truth.common import diff
from truth.mutants import EFFECT_KINDS, _key

store = Path(sys.argv[1]).resolve()
log = Path(sys.argv[2])
repo = store.parent
done = [
    (m.group(1), m.group(2))
    for m in re.finditer(r"^\[bench\] mutant (\S+) .*?: (\S+) \(", log.read_text(), re.M)
]
with StoreReader.open(str(store)) as r:
    runs = sorted(r.runs(), key=lambda x: x.id)
groups = {}
for run in runs:
    if run.complete:
        groups.setdefault(run.tests, []).append(run.id)
out = []
noisy = {"<import>"}
for tests, ids in groups.items():
    module = "utils" if tests < 1000 else "markers"
    base1, base2, *muts = ids
    control = diff(store, base1, base2, repo)
    unstable = {_key(t["id"], c) for t in control["tests"] for c in t.get("changes", [])}
    names = [d for d in done if d[0].startswith(module + ":")]
    for (mid, logged), run in zip(names, muts, strict=False):
        doc = diff(store, base1, run, repo)
        changed, killed, behaviour, kinds = [], [], set(), {}
        for t in doc["tests"]:
            if t["status"] == "unchanged":
                continue
            own = [c for c in t.get("changes", []) if _key(t["id"], c) not in unstable]
            if t["status"] == "changed" and not own:
                continue
            changed.append(t["id"])
            for c in own:
                kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
            if any(c["kind"] == "outcome_changed" for c in own):
                killed.append(t["id"])
            if t["status"] != "changed" or any(c["kind"] not in EFFECT_KINDS for c in own):
                behaviour.add(t["id"])
        quiet = [t for t in changed if t not in noisy]
        qk = [t for t in killed if t not in noisy]
        out.append(
            {
                "id": mid,
                "logged": logged,
                "run": run,
                "changed": len(changed),
                "quiet": len(quiet),
                "quiet_killed": len(qk),
                "quiet_no_effects": len([t for t in quiet if t in behaviour]),
                "effect_kinds": {k: v for k, v in kinds.items() if k in EFFECT_KINDS},
            }
        )
    if len(muts) != len(names):
        print(
            f"# {module}: {len(muts)} complete mutant runs, {len(names)} finished in the log",
            file=sys.stderr,
        )
print(json.dumps(out, indent=1))
