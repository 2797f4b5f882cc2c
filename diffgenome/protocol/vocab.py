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

# Where a symbol's code lives.
ORIGIN_REPO: Final = "repo"
ORIGIN_TEST: Final = "test"
ORIGIN_EXTERNAL: Final = "external"
ORIGIN_UNKNOWN: Final = "unknown"
ORIGINS: Final = (ORIGIN_REPO, ORIGIN_TEST, ORIGIN_EXTERNAL, ORIGIN_UNKNOWN)

SYMBOL_KINDS: Final = ("module", "class", "function", "lambda", "generator", "exception", "other")

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

# A test's unverified reason when a project module was imported from outside the recorded
# tree (``foreign-module:<name>=<path>``): the run recorded another tree's code, so no diff
# reuses it.
REASON_FOREIGN_MODULE: Final = "foreign-module"
