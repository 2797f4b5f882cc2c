"""Rich renderings of store contents for people.

Kept apart from loading and data so that the CLI, reports and tests can render the same
objects to any console. Everything user-recorded (ids, predicates, symbols) goes into
``Text`` objects, never into markup strings, so brackets in test ids cannot turn into styles.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from diffgenome.analysis.diff.effects import effect_text
from diffgenome.analysis.models import (
    Branch,
    CallNode,
    Node,
    OsEventNode,
    Overflow,
    PhaseGenome,
    Run,
    SubstitutionNode,
    TestRecord,
)
from diffgenome.protocol.runs import STATUS_COMPLETE, STATUS_RUNNING
from diffgenome.protocol.vocab import IMPORT_TEST_ID, PHASES, STATUS_UNVERIFIED
from diffgenome.store.reader import RunSummary, TestSummary

TIMES = "\u00d7"  # multiplication sign, as in "symbol x3"
_STATUS_STYLE = {STATUS_COMPLETE: "green", STATUS_RUNNING: "yellow"}
_OUTCOME_STYLE = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}


def short_commit(commit: str | None, dirty: bool | None) -> str:
    if commit is None:
        return "-"
    return commit[:12] + ("*" if dirty else "")


def size_text(size: int) -> str:
    """Bytes for people: ``812 B``, ``4.2 kB``, ``56.0 MB`` (powers of 1000, as ``du --si``)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"  # pragma: no cover - the loop always returns


def selection_text(selection: Sequence[str], max_node_ids: int = 3) -> str:
    """The arguments that chose the tests, quoted as a shell would need them; ``(default)``
    for none (pytest's ``testpaths`` or the rootdir). More than ``max_node_ids`` test node
    ids (a confirmation selects every test that differed: google-auth, 166) are counted, not
    listed: the table is for finding a run; ``runs --json`` has the whole selection."""
    if not selection:
        return "(default)"
    node_ids = [arg for arg in selection if "::" in arg and not arg.startswith("-")]
    if len(node_ids) <= max_node_ids:
        return " ".join(shlex.quote(arg) for arg in selection)
    others = [arg for arg in selection if arg not in node_ids]
    return " ".join([*(shlex.quote(arg) for arg in others), f"(+{len(node_ids)} test ids)"])


def runs_table(
    runs: Sequence[RunSummary], store: str | None = None, file_size: int | None = None
) -> RenderableType:
    """The run list, newest first as given: how each run was made (origin and selection)
    and how much of the store it takes; below it, where the store is and its total."""
    if not runs:
        return Text("no runs recorded yet", style="dim")
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = ("run", "started", "commit", "status", "tests", "size", "origin", "python")
    for column in (*columns, "selection"):
        table.add_column(
            column, justify="right" if column in ("tests", "size") else "left", no_wrap=True
        )
    for run in runs:
        table.add_row(
            Text(run.id),
            Text(run.started_at),
            Text(short_commit(run.commit, run.dirty)),
            Text(run.status, style=_STATUS_STYLE.get(run.status, "red")),
            Text(str(run.tests)),
            Text(size_text(run.size)),
            Text(run.origin or "-"),
            Text(run.python),
            Text(selection_text(run.selection)),
        )
    footer: list[RenderableType] = []
    if any(run.dirty for run in runs):
        footer.append(Text("* recorded with uncommitted changes", style="dim"))
    if store is not None:
        total = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
        total += f", {size_text(sum(run.size for run in runs))} of recordings"
        if file_size is not None:
            total += f" ({size_text(file_size)} on disk)"
        footer.append(Text(f"{total} in {store}", style="dim"))
    return Group(table, *footer) if footer else table


def run_header(run: Run) -> RenderableType:
    """Which run this is and, first and in red, why it must not be read as whole."""
    title = Text.assemble(
        ("run ", "bold"),
        (run.id, "bold"),
        f"  {short_commit(run.commit, run.dirty)}  {run.started_at}  {run.python}",
    )
    lines: list[RenderableType] = [title]
    if not run.complete:
        for reason in run.incomplete_reasons or ["incomplete"]:
            lines.append(Text(f"incomplete: {reason}", style="red"))
    return Group(*lines)


def run_tests_table(run: Run, tests: Sequence[TestSummary]) -> RenderableType:
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("test")
    table.add_column("outcome")
    table.add_column("verified")
    for test in tests:
        verified = (
            Text("yes", style="green")
            if test.verified
            else Text(
                "no: " + "; ".join(test.unverified_reasons or (STATUS_UNVERIFIED,)), style="red"
            )
        )
        table.add_row(
            Text(test.id),
            Text(test.outcome, style=_OUTCOME_STYLE.get(test.outcome, "")),
            verified,
        )
    real = sum(1 for test in tests if test.id != IMPORT_TEST_ID)
    count = Text(
        f"{real} test{'' if real == 1 else 's'}"
        + (" and the <import> record" if real != len(tests) else "")
        + ("" if real else ": the selection is empty"),
        style="dim",
    )
    return Group(run_header(run), table if tests else Text("no tests", style="dim"), count)


def genome_tree(run: Run, test: TestRecord) -> RenderableType:
    """A test's genome: one subtree per phase, calls nested as recorded, decisions under
    the call node they were taken in."""
    parts: list[RenderableType] = [run_header(run)]
    if not test.verified:
        for reason in test.unverified_reasons or [STATUS_UNVERIFIED]:
            parts.append(Text(f"unverified: {reason}", style="bold red"))
    root = Tree(
        Text.assemble((test.id, "bold"), "  ", (test.outcome, _OUTCOME_STYLE.get(test.outcome, "")))
    )
    for phase in PHASES:
        genome = test.phases.get(phase)
        if genome is not None:
            _phase_tree(root.add(Text(phase, style="bold cyan")), genome)
    if not test.phases:
        root.add(Text("no phases recorded", style="dim"))
    if test.effects or test.effects_unrecorded:
        effects = root.add(Text("effects", style="bold cyan"))
        for effect in test.effects or ():
            shown = effect_text(effect.model_dump(mode="json", exclude_none=True))
            effects.add(Text(f"[{effect.phase}] {shown}"))
        for why in test.effects_unrecorded:
            effects.add(Text(f"not seen: {why}", style="dim"))
    parts.append(root)
    return Group(*parts)


def _phase_tree(tree: Tree, genome: PhaseGenome) -> None:
    by_id = {node.id: node for node in genome.nodes}
    children: dict[int | None, list[Node]] = defaultdict(list)
    for node in genome.nodes:
        parent = node.parent if node.parent in by_id and node.parent != node.id else None
        children[parent].append(node)
    decisions: dict[int | None, list[Branch]] = defaultdict(list)
    for branch in genome.branches:
        decisions[branch.node if branch.node in by_id else None].append(branch)

    for branch in decisions[None]:
        tree.add(_branch_label(branch))
    # Iterative, because recorded call chains can be deeper than Python's recursion limit.
    stack: list[tuple[Tree, Node]] = [(tree, n) for n in reversed(children[None])]
    seen: set[int] = set()
    while stack:
        into, node = stack.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        branch_tree = into.add(_node_label(node))
        for branch in decisions[node.id]:
            branch_tree.add(_branch_label(branch))
        stack.extend((branch_tree, child) for child in reversed(children[node.id]))
    if not genome.nodes and not genome.branches:
        tree.add(Text("nothing recorded", style="dim"))


def _node_label(node: Node) -> Text:
    if isinstance(node, CallNode):
        return _call_label(node)
    if isinstance(node, SubstitutionNode):
        return _substitution_label(node)
    return _os_event_label(node)


def _call_label(node: CallNode) -> Text:
    text = Text.assemble((node.symbol, "bold"), f" {TIMES}{node.count}")
    details = [f"{exit} {count}" for exit, count in sorted(node.exits.items())]
    details.append(_counted("args", len(node.args), node.args_overflow))
    details.append(_counted("results", len(node.results), node.results_overflow))
    if node.state or node.state_overflow:
        details.append(_counted("state", len(node.state), node.state_overflow))
    if node.via:
        details.append(f"via {node.via}")
    text.append("  " + " · ".join(details), style="dim")
    return text


def _substitution_label(node: SubstitutionNode) -> Text:
    target = node.claimed_target or "an unknown target"
    text = Text.assemble(
        ("⇄ stand-in ", "magenta"),
        (node.mechanism, "magenta"),
        f" for {target} ({node.relation}) {TIMES}{node.count}",
    )
    details = [f"by {node.substitute}"]
    if node.path:
        details.append(f"path {node.path}")
    details.extend(f"{exit} {count}" for exit, count in sorted(node.exits.items()))
    if node.args or node.args_overflow:
        details.append(_counted("args", len(node.args), node.args_overflow))
    text.append("  " + " · ".join(details), style="dim")
    if node.signature_mismatch:
        text.append("  signature mismatch", style="bold red")
        if node.seam is not None and node.seam.problems:
            text.append(": " + "; ".join(node.seam.problems), style="red")
    return text


def _os_event_label(node: OsEventNode) -> Text:
    if node.outcome.startswith("refused"):
        icon, style = "⛔", "red"
    elif node.outcome == "allowed":
        icon, style = "↗", ""
    else:
        icon, style = "⚠", "yellow"
    return Text(f"{icon} {node.kind} {node.target} {node.outcome} {TIMES}{node.count}", style=style)


def _branch_label(branch: Branch) -> Text:
    prefix = branch.symbol + "/"
    site = branch.site[len(prefix) :] if branch.site.startswith(prefix) else branch.site
    outcomes = branch.outcomes
    one_sided = not (outcomes.true and outcomes.false)
    return Text.assemble(
        (site, "cyan"),
        " `",
        branch.predicate,
        "`: ",
        (f"true {outcomes.true} / false {outcomes.false}", "yellow" if one_sided else ""),
    )


def _counted(name: str, kept: int, overflow: Overflow | None) -> str:
    return f"{name} {kept}" + (f" (+{overflow.count} more)" if overflow else "")
