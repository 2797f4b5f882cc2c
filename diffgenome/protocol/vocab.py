"""Closed vocabularies of the genome and diff formats.

Plain string constants (not enums) so that the recording side can use them on hot paths
without attribute lookups on enum members, and so that other languages can copy the lists.
The writers (recording side), the differ and the pydantic models all take their words from
here; the models spell them as ``Literal`` types, and a test checks each against its tuple.
"""

from __future__ import annotations

from typing import Final

# Phases of a test, in execution order.
PHASES: Final = ("setup", "call", "teardown")

# Pseudo-test that holds collection/import-time execution.
IMPORT_TEST_ID: Final = "<import>"

TEST_OUTCOMES: Final = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")

# Where a symbol's code lives (``symbols[].origin``).
ORIGIN_REPO: Final = "repo"
ORIGIN_TEST: Final = "test"
ORIGIN_EXTERNAL: Final = "external"
ORIGIN_UNKNOWN: Final = "unknown"
SYMBOL_ORIGINS: Final = (ORIGIN_REPO, ORIGIN_TEST, ORIGIN_EXTERNAL, ORIGIN_UNKNOWN)

SYMBOL_KIND_MODULE: Final = "module"
SYMBOL_KINDS: Final = (
    SYMBOL_KIND_MODULE,
    "class",
    "function",
    "lambda",
    "generator",
    "exception",
    "other",
)

PLANES: Final = ("symbol", "os")
FIDELITIES: Final = ("complete", "partial")

# The ``type`` of a node in a phase's tree.
TYPE_CALL: Final = "call"
TYPE_SUBSTITUTION: Final = "substitution"
TYPE_OS_EVENT: Final = "os_event"
NODE_TYPES: Final = (TYPE_CALL, TYPE_SUBSTITUTION, TYPE_OS_EVENT)

# How a stand-in took the place of real code.
MOCK_OBJECT: Final = "mock_object"
INTERPOSITION: Final = "interposition"
FAKE: Final = "fake"
STUB: Final = "stub"

#: The state bucket of ``self.X`` when the instance holds no ``X`` and its class (or a base)
#: defines one: a class attribute or a method, read from the class dicts (values revision 3).
CLASS_ATTRIBUTE_BUCKET: Final = "class attribute"
MECHANISMS: Final = (MOCK_OBJECT, INTERPOSITION, FAKE, STUB, "unknown")
RELATIONS: Final = (
    "spec",
    "patch-target",
    "instance-attribute",
    "monkeypatch",
    "override",
    "none",
)

OS_CONNECT: Final = "connect"
OS_DNS: Final = "dns"
OS_BIND: Final = "bind"
OS_LISTEN: Final = "listen"
OS_SENDTO: Final = "sendto"
OS_SUBPROCESS: Final = "subprocess"
# A child process running Python, whose code the recorder did not see.
OUTCOME_UNTRACED_CHILD: Final = "untraced-child"
# A child process running another program than Python: its identity is the evidence.
OUTCOME_PROGRAM: Final = "program"
# A child process running Python whose in-scope behaviour was recorded into the test's genome
# (its calls hang under this event, ``via`` "process").
OUTCOME_RECORDED_CHILD: Final = "recorded-child"
# ``via`` of the top-level calls of a recorded child process.
VIA_PROCESS: Final = "process"
OS_EVENT_KINDS: Final = (OS_CONNECT, OS_DNS, OS_BIND, OS_LISTEN, OS_SENDTO, OS_SUBPROCESS)

DECISION_KINDS: Final = ("if", "while", "ifexp", "comprehension", "match", "assert")

# ``isolate``: a network namespace with only loopback (the kernel holds every process of the
# session), and the audit-hook guard judging as under ``loopback`` on top.
EGRESS_POLICIES: Final = ("loopback", "block", "allow", "isolate")

# When a call node's state fact was read: at the call's entry, or at its return (a call that
# raises leaves no exit facts).
STATE_ENTRY: Final = "entry"
STATE_EXIT: Final = "exit"
STATE_MOMENTS: Final = (STATE_ENTRY, STATE_EXIT)

# Exit keys of a call node: "returned", or "raised:<exception symbol>".
EXIT_RETURNED: Final = "returned"
EXIT_RAISED_PREFIX: Final = "raised:"
# A call still running when its (recorded child) process ended: ``os._exit``, or a daemon
# thread's frame at interpreter exit.
EXIT_PROCESS_ENDED: Final = "process-ended"
# A generator or coroutine that suspended (yield/await) rather than returned.
EXIT_YIELDED: Final = "yielded"
# A call another thread was still inside when the phase ended (a server loop, a worker).
EXIT_RUNNING: Final = "running"

# ``via`` of calls made on another thread or task than their parent's: a thread started by
# the parent in this phase, an asyncio task it created, or a thread started in an earlier
# phase of this test (a fixture's server), whose work hangs under the phase's root.
VIA_THREAD: Final = "thread"
VIA_TASK: Final = "task"
VIA_EARLIER_THREAD: Final = "earlier-thread"
# ... and a thread started by another test, or between tests: its work lands in whichever
# phase is running, which the differ reads as timing.
VIA_FOREIGN_THREAD: Final = "foreign-thread"

SYMBOL_PREFIX: Final = "py:"

# Why a run is incomplete: each of its ``incomplete_reasons`` starts with one of these words
# (a reason may go on after ": " with details).
RUN_INTERRUPTED: Final = "interrupted"
RUN_INTERNAL_ERROR: Final = "internal-error"
RUN_ENDED_EARLY: Final = "session-ended-early"
# The store failed while the run was recorded (disk full, deleted, read-only): recording
# stopped, and the reason says the store's own words.
RUN_STORE_FAILED: Final = "store-failed"
# The recorder could not start (its detail says why): the run holds no test.
RUN_RECORDER_START_FAILED: Final = "recorder-start-failed"
RUN_REASONS: Final = (
    RUN_INTERRUPTED,
    RUN_INTERNAL_ERROR,
    RUN_ENDED_EARLY,
    RUN_STORE_FAILED,
    RUN_RECORDER_START_FAILED,
)

# Why a test is unverified: each of its ``unverified_reasons`` is ``[<phase>:]<word>[:<detail>]``
# (the phase when one phase's capture is incomplete), with one of these words. Readers match
# on the word; the details are for people. docs/protocol.md lists them (a test checks).
REASON_TOOL_ID_UNAVAILABLE: Final = "tool-id-unavailable"
REASON_MONITORING_DISTURBED: Final = "monitoring-disturbed"
REASON_TRUNCATED: Final = "truncated"
REASON_UNTRACED_SUBPROCESS: Final = "untraced-subprocess"
REASON_UNATTRIBUTED: Final = "unattributed"
REASON_UNMAPPED_SOURCE: Final = "unmapped-source"
REASON_RECURSION_LIMIT: Final = "recursion-limit-reached"
REASON_CHILD_UNFINISHED: Final = "child-unfinished"
REASON_CHILD_UNREADABLE: Final = "child-unreadable"
REASON_CHILDREN_ERROR: Final = "children-error"
REASON_TRACER_ERROR: Final = "tracer-error"
REASON_RECORDER_ERROR: Final = "recorder-error"
REASON_NOT_RECORDED: Final = "not-recorded"
REASON_EXPORT_ERROR: Final = "export-error"
REASON_INCONSISTENT_EXITS: Final = "inconsistent-exits"
REASON_IMPORTED_BEFORE_RECORDING: Final = "imported-before-recording"
# A project module imported from outside the recorded tree (``foreign-module:<name>=<path>``):
# the run recorded another tree's code, so no diff reuses it.
REASON_FOREIGN_MODULE: Final = "foreign-module"
REASON_SHARDS_DISAGREE: Final = "shards-disagree"
# The store could not encode a value of the test's record (what no escape makes storable: an
# integer past Python's digit limit, a value JSON has no form for): the record is stored
# without its phases, so the cost is that test's, never the run's.
REASON_NOT_STORABLE: Final = "not-storable"
UNVERIFIED_REASONS: Final = {
    REASON_TOOL_ID_UNAVAILABLE: "another tool holds the monitoring tool id (detail: its name)",
    REASON_MONITORING_DISTURBED: "code under test changed diffgenome's monitoring while the "
    "phase ran (detail: what: tool-id-taken, tool-id-freed, callback-replaced, "
    "events-changed, local-events-changed, unrestorable)",
    REASON_TRUNCATED: "a bound was reached and the tree was cut (detail: which bound)",
    REASON_UNTRACED_SUBPROCESS: "a child process ran without a recorder (detail: the program)",
    REASON_UNATTRIBUTED: "work on another thread or process that no test can be named for "
    "(detail: thread or process)",
    REASON_UNMAPPED_SOURCE: "project code ran whose source could not be read (detail: module)",
    REASON_RECURSION_LIMIT: "the recursion limit was reached; deeper calls went unrecorded",
    REASON_CHILD_UNFINISHED: "a recorded child process did not finish its capture (detail: "
    "the child)",
    REASON_CHILD_UNREADABLE: "a child process's capture could not be read",
    REASON_CHILDREN_ERROR: "the child-process recorder failed (detail: how often)",
    REASON_TRACER_ERROR: "a monitoring callback failed (detail: how often)",
    REASON_RECORDER_ERROR: "a part of the recorder failed (detail: which part, the error's type)",
    REASON_NOT_RECORDED: "the phase was not recorded at all (detail: the phase)",
    REASON_EXPORT_ERROR: "the phase's tree could not be exported (detail: phase, error type)",
    REASON_INCONSISTENT_EXITS: "the tree's call counts and exits disagree (detail: how many nodes)",
    REASON_IMPORTED_BEFORE_RECORDING: "on ``<import>``: project modules imported before the "
    "recorder started (detail: how many)",
    REASON_FOREIGN_MODULE: "a project module came from outside the recorded tree (detail: "
    "name=path)",
    REASON_SHARDS_DISAGREE: "a combined run: shards recorded the test differently (detail: "
    "the shards)",
    REASON_NOT_STORABLE: "a value of the test's record could not be written to the store; "
    "its phases were left out (detail: the error's type)",
}

# --- the diff's words (``diffgenome-diff``) ------------------------------------------------

# What a test's comparison concluded (``tests[].status``; docs/diffing.md, "Statuses").
STATUS_UNCHANGED: Final = "unchanged"
STATUS_CHANGED: Final = "changed"
STATUS_ADDED: Final = "added"
STATUS_REMOVED: Final = "removed"
STATUS_UNVERIFIED: Final = "unverified"
STATUS_UNSTABLE: Final = "unstable"
STATUS_TOUCHED: Final = "touched"
STATUS_RESTRUCTURED: Final = "restructured"
TEST_STATUSES: Final = (
    STATUS_UNCHANGED,
    STATUS_CHANGED,
    STATUS_ADDED,
    STATUS_REMOVED,
    STATUS_UNVERIFIED,
    STATUS_UNSTABLE,
    STATUS_TOUCHED,
    STATUS_RESTRUCTURED,
)

# What differs, one change at a time (``tests[].changes[].kind``), in the order reports
# show them.
OUTCOME_CHANGED: Final = "outcome_changed"
CALL_ADDED: Final = "call_added"
CALL_REMOVED: Final = "call_removed"
CALL_COUNT_CHANGED: Final = "call_count_changed"
EXIT_CHANGED: Final = "exit_changed"
RESULT_CHANGED: Final = "result_changed"
ARGS_CHANGED: Final = "args_changed"
BRANCH_CHANGED: Final = "branch_changed"
STAND_IN_ADDED: Final = "stand_in_added"
STAND_IN_REMOVED: Final = "stand_in_removed"
STAND_IN_CHANGED: Final = "stand_in_changed"
EGRESS_ADDED: Final = "egress_added"
EGRESS_REMOVED: Final = "egress_removed"
STATE_CHANGED: Final = "state_changed"
# The two warning kinds keep the words the diff format published (formats are versioned);
# their names here say which warnings each is about. The warnings that escaped a test, to
# pytest (its record's ``warnings``):
ESCAPED_WARNINGS_CHANGED: Final = "warnings_changed"
OUTPUT_CHANGED: Final = "output_changed"
LOG_CHANGED: Final = "log_changed"
# The warnings a test caught itself (``pytest.warns``, ``catch_warnings``: its effects):
CAUGHT_WARNING_CHANGED: Final = "warning_changed"
FILE_CHANGED: Final = "file_changed"
ENVIRON_CHANGED: Final = "environ_changed"
EFFECT_KINDS: Final = (
    OUTPUT_CHANGED,
    LOG_CHANGED,
    CAUGHT_WARNING_CHANGED,
    FILE_CHANGED,
    ENVIRON_CHANGED,
)
CHANGE_KINDS: Final = (
    OUTCOME_CHANGED,
    CALL_ADDED,
    CALL_REMOVED,
    CALL_COUNT_CHANGED,
    EXIT_CHANGED,
    RESULT_CHANGED,
    ARGS_CHANGED,
    BRANCH_CHANGED,
    STAND_IN_ADDED,
    STAND_IN_REMOVED,
    STAND_IN_CHANGED,
    EGRESS_ADDED,
    EGRESS_REMOVED,
    STATE_CHANGED,
    ESCAPED_WARNINGS_CHANGED,
    *EFFECT_KINDS,
)

# How a symbol's code changed between the two commits (``code_changes[].change``).
CODE_ADDED: Final = "added"
CODE_REMOVED: Final = "removed"
CODE_MODIFIED: Final = "modified"
CODE_CHANGE_KINDS: Final = (CODE_ADDED, CODE_REMOVED, CODE_MODIFIED)
