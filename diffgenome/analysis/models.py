"""Pydantic models of the published formats; the JSON Schemas in docs/schema/ come from here.

Field names are the contract that other tools and languages read. Identities (symbols, sites,
node paths) never contain line numbers; ``Symbol.line`` is a location for people only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from diffgenome.protocol.formats import DIFF_FORMAT, GENOME_FORMAT

assert GENOME_FORMAT == "diffgenome-genome/2" and DIFF_FORMAT == "diffgenome-diff/3"

# The words of diffgenome.protocol.vocab, spelled out because a type checker reads only
# literals here; tests/unit/test_protocol.py fails when one of them no longer equals its tuple.
SymbolOrigin = Literal["repo", "test", "external", "unknown"]
Outcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
Phase = Literal["setup", "call", "teardown"]
Plane = Literal["symbol", "os"]
Fidelity = Literal["complete", "partial"]
Mechanism = Literal["mock_object", "interposition", "fake", "stub", "unknown"]
Relation = Literal["spec", "patch-target", "instance-attribute", "monkeypatch", "override", "none"]
DecisionKind = Literal["if", "while", "ifexp", "comprehension", "match", "assert"]
TestStatus = Literal[
    "unchanged", "changed", "added", "removed", "unverified", "unstable", "touched", "restructured"
]
ChangeKind = Literal[
    "outcome_changed",
    "call_added",
    "call_removed",
    "call_count_changed",
    "exit_changed",
    "result_changed",
    "args_changed",
    "branch_changed",
    "stand_in_added",
    "stand_in_removed",
    "stand_in_changed",
    "egress_added",
    "egress_removed",
    "state_changed",
    "warnings_changed",
    "output_changed",
    "log_changed",
    "warning_changed",
    "file_changed",
    "environ_changed",
]
CodeChangeKind = Literal["added", "removed", "modified"]


class _Model(BaseModel):
    # Strict: a document says `true`, not "yes"; JSON has no other way to spell a bool,
    # a number or a string, and a reader that coerced would accept what no writer wrote.
    model_config = ConfigDict(extra="allow", frozen=False, strict=True)


class Run(_Model):
    """Metadata of one recorded pytest session."""

    id: str
    commit: str | None = Field(description="git commit sha of the recorded tree, if known")
    dirty: bool | None = Field(description="uncommitted changes were present when recorded")
    python: str = Field(description="implementation and version, e.g. 'CPython 3.13.0'")
    platform: str
    started_at: str = Field(description="ISO 8601 UTC")
    finished_at: str | None = None
    complete: bool = Field(
        True, description="false when the session crashed or was interrupted: never read as whole"
    )
    incomplete_reasons: list[str] = []
    config: dict[str, object] = Field(
        description="recording configuration (roots, bounds, egress policy, ...)"
    )
    selection: list[str] = Field([], description="pytest arguments that chose the tests")
    recorded_selection: list[str] | None = Field(
        None,
        description="the selection without output-only options (-q, -v, --tb, -r, "
        "-p no:cacheprovider, --genome-store, ...), test paths from the git top: what the "
        "recording key hashes",
    )
    origin: Literal["pytest", "diff", "confirmation"] | None = Field(
        None,
        description="who asked for the recording: pytest --genome, diffgenome diff recording "
        "a side, or diff recording tests again to confirm a difference; absent: not said",
    )
    key_fingerprint: str | None = Field(
        None, description="fingerprint of the digest key: digests compare only when equal"
    )
    tool: str | None = Field(None, description="the recorder that wrote the run")
    core: Literal["c", "python"] | None = Field(
        None,
        description="which callbacks recorded (both record the same genomes; the pure-Python "
        "ones are slower): the compiled core or the pure-Python one; absent: not said",
    )
    core_reason: str | None = Field(
        None, description="why the pure-Python core recorded, in words (null for the compiled one)"
    )


class Collector(_Model):
    name: str
    plane: Plane
    fidelity: Fidelity
    notes: list[str] = []


class Symbol(_Model):
    id: str = Field(
        description="py:<module>.<qualname>[#ordinal], anonymous code <lambda>[<digest>]; "
        "never a line number"
    )
    origin: SymbolOrigin
    path: str | None = Field(None, description="file relative to the repository root")
    line: int | None = Field(None, description="first line, for people; not part of identity")
    kind: str


class ValueShape(_Model):
    """One distinct value seen: its type shape and a keyed digest (null: not canonicalisable)."""

    shape: str
    digest: str | None = None
    preview: str | None = Field(
        None,
        description="optional (--genome-preview): the value as a reviewer reads it, for a "
        "call's entry whose every value is a small scalar (None, a bool, a number or a str of "
        "at most 40 characters: 'x', 3, or width=3, fill='-' for arguments), secret-looking "
        "parts masked as <secret:...>; never for secret-named parameters nor values equal to "
        "an environment variable's; never compared (the digest is)",
    )


class Overflow(_Model):
    """What did not fit a bounded set: how many observations, and a keyed fingerprint of them."""

    count: int
    digest: str | None = None


class StateFact(_Model):
    when: Literal["entry", "exit"]
    target: str = Field(description="'self.<field>' or '<module>.<global>'")
    bucket: str = Field(description="none|bool:true|bool:false|zero|pos|neg|empty|nonempty|...")


class CallNode(_Model):
    id: int
    parent: int | None
    type: Literal["call"]
    symbol: str
    count: int
    exits: dict[str, int] = Field(
        {},
        description="'returned', 'yielded', 'raised:<exception symbol>', 'running' (another "
        "thread was still inside the call when the phase ended) or 'process-ended' (a recorded "
        "child process ended inside the call) -> count",
    )
    args: list[ValueShape] = []
    args_overflow: Overflow | None = None
    results: list[ValueShape] = []
    results_overflow: Overflow | None = None
    state: list[StateFact] = []
    state_overflow: Overflow | None = None
    via: str | None = Field(
        None,
        description="'thread' (a thread its parent started in this phase), 'task' (an asyncio "
        "task its parent created), 'earlier-thread' (a thread this test started in an earlier "
        "phase: a fixture's server; under the phase's root), 'foreign-thread' (a thread "
        "another test started, under the phase's root) or 'process' (a recorded child "
        "process)",
    )


class Seam(_Model):
    """What the seam check read: could the real target have accepted the stand-in's calls?"""

    target: str = Field(
        description="the real target's signature: names, kinds, short literal defaults ('…' "
        "for others), no annotations"
    )
    stand_in: str | None = Field(
        None, description="the stand-in's own signature (functions: stubs, fakes); null for mocks"
    )
    readings: list[str] = Field(
        [],
        description="how the calls reached the stand-in: function, instance (self implied), "
        "class (self explicit), method (the stand-in binds self like the real method), static, "
        "classmethod, ambiguous (instance or class: accepted when either binds)",
    )
    problems: list[str] = Field(
        [],
        description="differences of the stand-in's signature from the real one, and 'call: "
        "<reason>' for calls the real target would reject (at most 8)",
    )


class SubstitutionNode(_Model):
    id: int
    parent: int | None
    type: Literal["substitution"]
    mechanism: Mechanism
    substitute: str = Field(description="what stood in: a stand-in type or a test symbol")
    claimed_target: str | None = Field(description="symbol of the real code it replaces")
    relation: Relation = Field(
        description="how the claim is known; 'override': a test subclass's method"
    )
    path: str = Field(description="attribute path on the stand-in; '()' for a return value")
    count: int
    args: list[ValueShape] = []
    args_overflow: Overflow | None = None
    exits: dict[str, int] = {}
    signature_mismatch: bool = False
    seam: Seam | None = Field(
        None, description="present where the seam check ran (a real function target, no spec)"
    )


class OsEventNode(_Model):
    id: int
    parent: int | None
    type: Literal["os_event"]
    kind: str = Field(description="connect|dns|bind|listen|sendto|subprocess|...")
    target: str = Field(description="host as written and port, or program name")
    outcome: str = Field(
        description=(
            "'allowed', 'refused:egress-guard', 'program', 'recorded-child', 'untraced-child', ..."
        )
    )
    count: int


Node = Annotated[CallNode | SubstitutionNode | OsEventNode, Field(discriminator="type")]


class BranchOutcomes(_Model):
    true: int = 0
    false: int = 0


class Branch(_Model):
    node: int
    site: str = Field(description="<symbol>/<kind>[<ordinal>]; never a line number")
    symbol: str
    kind: DecisionKind
    predicate: str = Field(description="source text of the condition, for people")
    outcomes: BranchOutcomes


class PhaseGenome(_Model):
    nodes: list[Node] = []
    branches: list[Branch] = []


class WarningFact(_Model):
    """Warnings that escaped the test to pytest's capture, counted by what they said."""

    category: str = Field(description="'DeprecationWarning' or '<module>.<qualname>'")
    origin: str = Field(
        description="file the warning is attributed to (after stacklevel), locations "
        "replaced by markers such as '<root>', the secret rules applied; never a line number"
    )
    message_digest: str | None = Field(
        None,
        description="keyed digest (HMAC-SHA256 under the store's key, 128 bits, hex) of the "
        "message with run-specific parts replaced; what warnings are compared by. Absent: "
        "a recorder before 2026-12-02, which kept the message as text",
    )
    message: str | None = Field(
        None,
        description="with message_digest: a preview for people, recorded only under "
        "--genome-preview (at most 200 characters, secret-looking parts masked as "
        "'<secret:…>'), never compared. Without message_digest (a recorder before "
        "2026-12-02): the message as text, cut at 200 characters and then ending with "
        "'…[<blake2b of the whole>]'",
    )
    finalizing: bool | None = Field(
        None,
        description="true: said while the interpreter finalized something (a ResourceWarning, "
        "an unraisable exception, 'coroutine … was never awaited'): which test shows it is "
        "timing",
    )
    count: int


_DIGEST = "keyed digest (HMAC-SHA256 under the store's key, 128 bits, hex)"
_BOUND = (
    "set on the one entry that says a bound cut: how many more were not kept "
    "('count'), all other fields absent"
)


class _Effect(_Model):
    phase: Phase
    bound: str | None = Field(None, description=_BOUND)


class OutputEffect(_Effect):
    """What a phase printed, per stream, as pytest captured it."""

    type: Literal["output"]
    stream: Literal["stdout", "stderr"] | None = None
    digest: str | None = Field(
        None,
        description=f"{_DIGEST} of the captured text with locations, addresses and temp "
        "names replaced and the secret rules applied",
    )
    lines: int | None = None
    cut: bool | None = Field(None, description="true: only the first 4 Mi characters")
    preview: str | None = Field(
        None,
        description="added 2026-12-07: the start of the text (200 characters, the secret rules "
        "applied), only under --genome-preview; not compared",
    )


class LogEffect(_Effect):
    """Log records that reached the root logger, counted by what they are."""

    type: Literal["log"]
    logger: str | None = None
    level: str | None = None
    template_digest: str | None = Field(None, description=f"{_DIGEST} of record.msg")
    args_digest: str | None = Field(
        None,
        description=f"{_DIGEST} of record.args (null: none; 'unknown': a repr naming an address)",
    )
    template: str | None = Field(
        None, description="a preview of the template, only under --genome-preview; not compared"
    )
    count: int | None = None


class WarningEffect(_Effect):
    """Every warning shown while the phase ran, caught by the test or not."""

    type: Literal["warning"]
    category: str
    origin: str = Field(
        description="the symbol of the code the warning is attributed to (after stacklevel), "
        "else its file with locations replaced; never a line number"
    )
    message_digest: str
    escaped: bool = Field(
        description="true: it reached pytest's capture (also in the test's 'warnings'); "
        "false: the test caught it (pytest.warns, catch_warnings)"
    )
    count: int


class FileEffect(_Effect):
    """A file project or test code opened for writing during the phase."""

    type: Literal["file"]
    path: str | None = Field(None, description="absolute path with locations as markers")
    mode: Literal["write", "append"] | None = None
    digest: str | None = Field(
        None, description=f"{_DIGEST} of its content at the phase's end (text made stable)"
    )
    state: Literal["removed", "unreadable"] | None = None
    cut: bool | None = Field(None, description="true: only its first MiB was digested")
    count: int | None = None


class EnvironEffect(_Effect):
    """A variable of os.environ that differs between the phase's start and its end."""

    type: Literal["environ"]
    name: str
    change: Literal["set", "unset", "changed"]
    digest: str | None = Field(None, description=f"{_DIGEST} of the new value; null: unset")


Effect = Annotated[
    OutputEffect | LogEffect | WarningEffect | FileEffect | EnvironEffect,
    Field(discriminator="type"),
]


class TestRecord(_Model):
    id: str = Field(description="pytest node id relative to the repository root")
    outcome: Outcome
    verified: bool
    unverified_reasons: list[str] = []
    phases: dict[Phase, PhaseGenome] = {}
    disclosed: list[str] = Field(
        [],
        description="facts about the capture that leave it complete, e.g. "
        "'call:thread-outlived-phase' (what that thread did later is recorded in the phase "
        "it did it in, as 'earlier-thread' work); 'shared-node-id:N' (N collected items carry "
        "the test's node id: its id is its place among them, '<node id>#1' for the second)",
    )
    warnings: list[WarningFact] | None = Field(
        None,
        description="warnings pytest caught while the test ran (collection's for "
        "'<import>'); absent: not recorded (pytest's warnings plugin was off, or a "
        "recorder before warnings were recorded), which is never read as 'none'",
    )
    effects: list[Effect] | None = Field(
        None,
        description="what each phase printed, logged, warned, wrote and set "
        "(docs/protocol.md, 'Effects'); absent: not recorded (a recorder before effects, "
        "'<import>', an older recorder's subtest), which is never read as 'none'",
    )
    effects_unrecorded: list[str] = Field(
        [],
        description="kinds of effect this test's recording could not see, as "
        "'<kind>:<why>': 'output:capture-off' (-s), 'output:test-captures' (capsys, capfd, "
        "before effects revision 4), "
        "'<kind>:in-test' (a subtest: its test's call phase holds that kind)",
    )
    params: dict[str, str | None] | None = Field(
        None,
        description="a parametrized test's values, by argument name: the keyed digest of "
        "each (null: not canonicalisable within bounds). The differ pairs a test whose "
        "id pytest numbered by position (test[kwargs18] -> test[kwargs20]) by these",
    )


class GenomeDocument(_Model):
    """``diffgenome-genome``: one recorded run."""

    format: Literal["diffgenome-genome/1", "diffgenome-genome/2"] = Field(
        "diffgenome-genome/2",
        description="/2 names decision sites by content; /1 (positional ids) is still read",
    )
    run: Run
    collectors: list[Collector] = []
    symbols: list[Symbol] = []
    tests: list[TestRecord] = []


# --- diffgenome-diff --------------------------------------------------------------------------


class DiffSide(_Model):
    run: str | None
    commit: str | None
    rev: str
    core: Literal["c", "python"] | None = Field(
        None, description="the core that recorded this side's run (Run.core); absent: not said"
    )
    core_reason: str | None = Field(None, description="why the pure-Python core (Run.core_reason)")


class DiffSummary(_Model):
    tests: int = 0
    unchanged: int = 0
    changed: int = 0
    added: int = 0
    removed: int = 0
    unverified: int = 0
    unstable: int = 0
    touched: int = 0
    restructured: int = 0
    seen: int = Field(
        default=0, description="added 2026-12-07: changed tests that see a change (reach 'seen')"
    )
    internal: int = Field(
        default=0,
        description="added 2026-12-07: changed tests whose changes are all inside the project, "
        "results at the tests equal (reach 'internal')",
    )
    confirmed: int = Field(
        0, description="tests recorded again on both sides to tell change from noise"
    )
    carried: int = Field(
        default=0,
        description="added 2026-12-07: unchanged tests head did not run (diff --selective): "
        "the change does not reach them, their base recording carried over",
    )


class Change(_Model):
    kind: ChangeKind
    phase: str | None = None
    path: list[str] = []
    symbol: str | None = None
    site: str | None = None
    predicate: str | None = None
    base: object = None
    head: object = None
    reach: Literal["seen", "internal"] | None = Field(
        default=None,
        description="added 2026-12-07: 'seen' where the test itself sees the change (its "
        "outcome, what comes back into its own code, effects, stand-ins, egress), 'internal' "
        "where it is inside the project and every result at the test's boundary is equal "
        "(docs/diffing.md, 'Reach')",
    )


class OutcomePair(_Model):
    base: str | None = None
    head: str | None = None


class TestDiff(_Model):
    id: str
    base_id: str | None = Field(
        default=None,
        description="the test's id in base when it differs from its id in head: pytest "
        "numbered it by position and a case inserted before it shifted the number; paired "
        "by its function and its parameter values",
    )
    status: TestStatus
    outcome: OutcomePair
    reasons: list[str] = Field(
        default_factory=list,
        description="why the test is unverified (`base: call:untraced-subprocess:git`), what "
        "was masked as unstable (`unstable (base confirmation): ...`), and on a `changed` or "
        "`unstable` test whose every difference comes from module-level state other tests "
        "left, `cross-test-state: global:NAME a → b at entry of SYMBOL ...` (docs/diffing.md, "
        "'Cross-test state'); an optional explanation, the status says what the gate does",
    )
    changes: list[Change] = []
    reach: Literal["seen", "internal"] | None = Field(
        default=None,
        description="added 2026-12-07, on a changed test: 'seen' when one of its changes is "
        "what the test sees, 'internal' when all are inside the project with every result "
        "at its boundary equal (docs/diffing.md, 'Reach')",
    )
    structure: list[str] = Field(
        default_factory=list,
        description="what a refactor moved in this test, one line each ('`pkg.m.g` extracted "
        "from `pkg.m.f`', '`pkg.m._a` renamed to `pkg.m._b` (the same code)'); its calls to "
        "code that exists on one side only are then contracted out of `changes`, which hold "
        "what still differs (docs/diffing.md, 'Structure')",
    )
    may_hide_change: bool = Field(
        False,
        description=(
            "unverified only: true when missing evidence could hide a change (a difference "
            "was observed, the sides are unverified for different reasons, a run is "
            "incomplete or digests are not comparable); such a test fails --fail-on changed"
        ),
    )


class Cause(_Model):
    """Changes of many tests that are one change: the same node, kind and before → after,
    with what differs by test (value digests, counts) left out."""

    summary: str = Field(description="the change as one line, values that differ by test left out")
    kind: str = Field(
        description="a change kind; 'structure' for what a refactor moved; 'anonymous_changed' "
        "for a lambda or generator expression whose code changed (named by its content, it "
        "shows as its old name's call removed and its new name's added)"
    )
    symbol: str | None = None
    site: str | None = None
    tests: int = Field(description="how many tests show it")
    statuses: dict[str, int] = Field(default_factory=dict, description="those tests by status")
    examples: list[str] = Field(
        default_factory=list, description="a few of those tests, in the report's order"
    )
    reach: Literal["code", "several", "none"] | None = Field(
        default=None,
        description="added 2026-12-02: which code change it descends from (docs/diffing.md, "
        "'Causes by code change'): 'code' one changed symbol (`origin`); 'several' more than "
        "one (`origins`); 'none' no changed code in reach. Absent: the diff had no code "
        "changes to read",
    )
    origin: str | None = Field(
        default=None, description="the changed symbol it descends from, when reach is 'code'"
    )
    origins: list[str] = Field(
        default_factory=list,
        description="the changed symbols in reach of its changes, sorted (one when reach is "
        "'code', several when 'several')",
    )
    sees: bool = Field(
        default=False,
        description="added 2026-12-07: some test sees this change (its outcome, what comes "
        "back into its own code, effects, stand-ins, egress: docs/diffing.md, 'Reach'); such "
        "causes come first",
    )


class CauseGroup(_Model):
    """The causes that descend from one code change, or the causes that do not descend from
    one: the first level of the report of a change that hits most of a suite."""

    reach: Literal["code", "several", "none"] = Field(
        description="'code': the causes of one changed symbol; 'several': causes whose "
        "changes reach more than one code change; 'none': causes with no changed code in reach"
    )
    symbol: str | None = Field(default=None, description="the changed symbol, for 'code'")
    change: CodeChangeKind | None = Field(
        default=None, description="what happened to it (its `code_changes` entry)"
    )
    code: str = Field(
        default="",
        description="what changed in its code, one line ('modified; decision `k is None` "
        "added'); for 'several', the changed symbols in reach; for 'none', 'no changed code "
        "on its call path' and, after '; changed besides code: ', the first changed files "
        "no symbol speaks for (configuration, data), added 2026-12-07",
    )
    symbols: list[str] = Field(
        default_factory=list, description="for 'several': the changed symbols in reach"
    )
    tests: int = Field(description="how many distinct tests show one of its causes")
    statuses: dict[str, int] = Field(default_factory=dict, description="those tests by status")
    causes: list[int] = Field(
        default_factory=list,
        description="its causes, as indexes into the document's `causes`, most telling first",
    )
    examples: list[str] = Field(default_factory=list, description="a few of those tests")


class CodeChange(_Model):
    symbol: str
    change: CodeChangeKind
    tests_base: list[str] = []
    tests_head: list[str] = []
    sites: list[dict[str, object]] = Field(
        default=[],
        description="its changed decisions: site, change, predicate, line (where the condition "
        "is at the reported revision, for people), and each side's outcomes",
    )
    gaps: list[str] = []
    path: str | None = Field(
        default=None,
        description="the file it is in, from the repository's top (head's; base's when removed)",
    )
    line: int | None = Field(
        default=None,
        description="where its definition starts in path at the reported revision (head, base "
        "when removed); for people and links only: no identity holds a line",
    )
    renamed_from: str | None = Field(
        default=None,
        description="base's name of code the differ paired under another name (renamed, "
        "moved, anonymous code bound anew: docs/diffing.md, 'Identity by mapping'); base's "
        "recordings were read under this entry's name",
    )


class Drift(_Model):
    claimed_target: str
    tests: list[str] = []
    evidence: list[str] = []


class DiffDocument(_Model):
    """``diffgenome-diff/3``: how behaviour changed between two recordings."""

    format: Literal["diffgenome-diff/3"] = "diffgenome-diff/3"
    base: DiffSide
    head: DiffSide
    summary: DiffSummary
    causes: list[Cause] = Field(
        default_factory=list,
        description="the changes of the changed and unverified tests, and what refactors "
        "moved, grouped: one entry per change signature with its test count, most telling "
        "first (outcomes, the changed code's own behaviour, its callers', structure)",
    )
    cause_groups: list[CauseGroup] = Field(
        default_factory=list,
        description="added 2026-12-02: the causes grouped by the code change they descend "
        "from, most telling first, then those through several code changes and those with "
        "no changed code on its call path; every cause is in exactly one group. Empty when "
        "the diff had no code changes to read",
    )
    tests: list[TestDiff] = []
    code_changes: list[CodeChange] = []
    drift: list[Drift] = []


# --- validation --------------------------------------------------------------------------------

_PHASES = TypeAdapter(dict[Phase, PhaseGenome])
# Phases already validated in this process, by identity (kept alive here, so an id is never
# reused): the store hands out one object for equal recorded phases (store/reader.py), and
# most tests of a diff are recorded alike on both sides, so each is validated once.
_VALID_PHASES: dict[int, object] = {}
_NO_PHASES: dict[str, object] = {}
_MAX_REMEMBERED = 500_000


def genome_problem(
    document: dict[str, Any], trusted: Callable[[object], bool] | None = None
) -> tuple[str, str] | None:
    """The first reason ``document`` is not a valid genome document, as (where, what), or
    None. The same checks as ``GenomeDocument.model_validate``, with each distinct phases
    object checked once (sqlparse: validating two runs of 465 tests took 8 of 19 s), and
    none for which ``trusted`` answers True (phases a store read from bodies that matched
    their content address: the recorder's own bytes)."""
    tests = document.get("tests")
    if not isinstance(tests, list):
        return _first(GenomeDocument, document)
    # Phases are checked below, each distinct object once; here an empty one stands in (a
    # missing key would make pydantic deep-copy the default for every test).
    shallow = [{**test, "phases": _NO_PHASES} if isinstance(test, dict) else test for test in tests]
    problem = _first(GenomeDocument, {**document, "tests": shallow})
    if problem is not None:
        return problem
    for index, test in enumerate(tests):
        phases = test.get("phases", {})
        if id(phases) in _VALID_PHASES or (trusted is not None and trusted(phases)):
            continue
        try:
            _PHASES.validate_python(phases)
        except ValidationError as exc:
            where, what = _where(exc)
            return f"tests.{index}.phases.{where}".rstrip("."), what
        if len(_VALID_PHASES) < _MAX_REMEMBERED:
            _VALID_PHASES[id(phases)] = phases
    return None


def record_problem(
    test: object, trusted: Callable[[object], bool] | None = None
) -> tuple[str, str] | None:
    """:func:`genome_problem` for one test record, read on its own (a streamed export):
    where is relative to the record."""
    if not isinstance(test, dict):
        return _first(TestRecord, test)
    problem = _first(TestRecord, {**test, "phases": _NO_PHASES})
    if problem is not None:
        return problem
    phases = test.get("phases", {})
    if id(phases) in _VALID_PHASES or (trusted is not None and trusted(phases)):
        return None
    try:
        _PHASES.validate_python(phases)
    except ValidationError as exc:
        where, what = _where(exc)
        return f"phases.{where}".rstrip("."), what
    return None


def _first(model: type[BaseModel], data: object) -> tuple[str, str] | None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return _where(exc)
    return None


def _where(exc: ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "document"
    return where, str(first.get("msg", "invalid"))
