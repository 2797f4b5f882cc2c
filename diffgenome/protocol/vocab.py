"""Closed vocabularies of the genome and diff formats.

Plain string constants (not enums) so that the recording side can use them on hot paths
without attribute lookups on enum members, and so that other languages can copy the lists.
"""

from __future__ import annotations

from typing import Final

# Phases of a test, in execution order.
PHASES: Final = ("setup", "call", "teardown")

# Pseudo-test that holds collection/import-time execution.
IMPORT_TEST_ID: Final = "<import>"

TEST_OUTCOMES: Final = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")

ORIGINS: Final = ("repo", "test", "external", "unknown")

SYMBOL_KINDS: Final = ("module", "class", "function", "lambda", "generator", "exception", "other")

PLANES: Final = ("symbol", "os")
FIDELITIES: Final = ("complete", "partial")

NODE_TYPES: Final = ("call", "substitution", "os_event")

MECHANISMS: Final = ("mock_object", "interposition", "fake", "stub", "unknown")
RELATIONS: Final = (
    "spec",
    "patch-target",
    "instance-attribute",
    "monkeypatch",
    "override",
    "none",
)

OS_EVENT_KINDS: Final = ("connect", "dns", "bind", "listen", "sendto", "subprocess")

DECISION_KINDS: Final = ("if", "while", "ifexp", "comprehension", "match", "assert")

EGRESS_POLICIES: Final = ("loopback", "block", "allow")

# Exit keys of a call node: "returned", or "raised:<exception symbol>".
EXIT_RETURNED: Final = "returned"
EXIT_RAISED_PREFIX: Final = "raised:"
# A generator or coroutine that suspended (yield/await) rather than returned.
EXIT_YIELDED: Final = "yielded"

SYMBOL_PREFIX: Final = "py:"
