"""Python child processes, recorded into the genome of the test that started them (#11).

How a child is reached
    The way coverage.py measures subprocesses: while a session records, one line in a
    ``.pth`` file of the interpreter's site-packages (written when the session starts, removed
    when it ends) starts a collector in every new Python process of that environment, but
    only when ``DIFFGENOME_CHILD`` is in its environment; without it the line costs one
    dictionary lookup. The variable holds a *token* and the session's capture folder. Forked
    children (``os.fork``, multiprocessing ``fork``, the children a forkserver forks) run no
    ``.pth``: a fork hook turns the inherited collector into a fresh one for the child.

How a child is attributed
    Every child the egress guard sees (``subprocess``, ``os.system``, ``os.exec*``,
    ``os.posix_spawn``), every ``multiprocessing`` process start and every plain ``os.fork``
    is an ``os_event`` node of kind ``subprocess`` under the in-scope caller, and gets a token
    of its own (``<pid>.<phase>.<n>``): put into the C environment just before the child is
    made (``putenv`` only: ``os.environ``, which tests copy into values and environments,
    keeps the phase's token), onto the ``Process`` object (pickled to spawn and forkserver
    children), or kept in memory (a fork). Another program's spawn gets one too, so that
    Python it runs in turn hangs under it. A child given an explicit environment carries the
    token that environment was copied with; children that share a token are told apart by
    their arguments, and one that still maps to several spawning nodes is attached to the
    phase's root and disclosed (``unattributed:process``).

What a child sends back
    When it exits (``atexit``, and ``os._exit``, which multiprocessing's forked children end
    with) it writes its calling-context tree *before export*, values as their canonical
    forms, to ``<token>~<pid>-<image>.json`` in the capture folder (0700, under the system
    temporary folder, each file removed as soon as the parent has read it, the folder at
    session end). The parent rebuilds the tree and hangs it under the spawning node (``via``
    "process"), so the child's calls are exported, digested and ordered exactly like the
    parent's own: children of one node with the same calls merge, and the genome does not
    depend on pids or on the order in which children finished. A ``.started`` marker of the
    same name, written when the child's collector starts, tells a child that died before it
    could write (killed, crashed, still running when the phase ended:
    ``child-unfinished:<program>``) from one that never started recording
    (``untraced-subprocess:<program>``, an environment without the variable, another
    interpreter). A capture that arrives after its phase ended is counted and said once at
    session end; its phase was already disclosed. A recorded child that execs sends what it
    did so far first, and Python it becomes sends the rest under the same token.

Only the standard library is used, bound at import where event time needs it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any, Final

from diffgenome.protocol.vocab import (
    EXIT_PROCESS_ENDED,
    OS_SUBPROCESS,
    OUTCOME_PROGRAM,
    OUTCOME_RECORDED_CHILD,
    OUTCOME_UNTRACED_CHILD,
    REASON_CHILD_UNFINISHED,
    REASON_CHILD_UNREADABLE,
    REASON_CHILDREN_ERROR,
    REASON_TRACER_ERROR,
    REASON_UNATTRIBUTED,
    REASON_UNTRACED_SUBPROCESS,
    VIA_PROCESS,
)
from diffgenome.recording.collect.childhook import (
    CONFIG_NAME,
    ENV,
    FOLDER_PREFIX,
    VALUE_PREFIX,
    install_hook,
    parse_value,
    remove_stale_folders,
)
from diffgenome.recording.collect.childwire import (
    dump_tree,
    load_tree,
    read_file,
    try_remove,
    write_file,
)
from diffgenome.recording.collect.contract import (
    NODE_CALL,
    NODE_OS_EVENT,
    Bounds,
    Node,
    PhaseCapture,
)

if TYPE_CHECKING:
    from diffgenome.recording.collect.tracer import Tracer

#: Reasons a child gives about itself are the test's too, under this prefix.
CHILD_REASON_PREFIX: Final = "child:"
FORK_IDENTITY: Final = "fork"
MULTIPROCESSING_IDENTITY: Final = "multiprocessing"
_TOKEN_ATTRIBUTE: Final = "_diffgenome_token"

_environ = os.environ
_putenv = os.putenv
_unsetenv = os.unsetenv
_getpid = os.getpid
_listdir = os.listdir
_stat = os.stat
_remove = os.remove
_replace = os.replace
_getframe = sys._getframe
_json_dumps = json.dumps
_json_loads = json.loads
#: Names this program image's files apart from those of the image it may exec into, which
#: keeps the pid (a fork that becomes Python sends two captures).
_IMAGE: Final = os.urandom(4).hex()


# -- the process's one recorder of children --------------------------------------------------

_ACTIVE: Children | None = None
_FORK_HOOKED = False
_EXIT_WRAPPED = False
_ATEXIT_REGISTERED = False


class Children:
    """Tokens for the children this process starts, and the captures they send back.

    One per recording process: the session's (``owner``), or a recorded child's, which
    collects its own children the same way and sends the lot to its parent.
    """

    def __init__(self, tracer: Tracer, folder: str, bounds: Bounds) -> None:
        self.tracer = tracer
        self.folder = folder
        self.bounds = bounds
        self.pid = _getpid()
        self.owner = self.pid
        self.serial = 0
        self.count = 0
        self.base = f"{self.pid}.0"
        #: token -> the spawns that handed it to a child this phase: the node, whether a
        #: capture is expected (a Python child) or only welcome (another program, whose own
        #: Python children inherit the token), and the child's arguments (None: unknown),
        #: which tell apart children that share a token (explicit environments).
        self.table: dict[str, list[tuple[Node, bool, tuple[str, ...] | None]]] = {}
        #: Python children that cannot report (an explicit environment without the token).
        self.unreachable: list[Node] = []
        #: In a recorded child: the token its capture is sent under.
        self.child_token: str | None = None
        self.fork_token: str | None = None
        self.late = 0
        self.errors = 0
        self._listed_at = -1
        self._shipped_by: int | None = None
        #: The exec that turns this recorded child into Python, which sends a capture of its
        #: own under the same token: the parent then waits for one more.
        self._continued_by: Node | None = None
        self._local = threading.local()
        self._previous: Children | None = None
        self._start_original: tuple[type, Any] | None = None
        self.pth: str | None = None
        self._saved_env = _environ.get(ENV)

    # -- tokens ------------------------------------------------------------------------

    def _value(self, token: str) -> str:
        return f"{VALUE_PREFIX}{token}|{self.folder}"

    def begin_phase(self) -> None:
        """A new phase: children started from now on report under its tokens."""
        self.serial += 1
        self.count = 0
        self.table = {}
        self.unreachable = []
        self.base = f"{self.pid}.{self.serial}"
        _environ[ENV] = self._value(self.base)

    def _token_for(
        self, node: Node, expected: bool = True, argv: tuple[str, ...] | None = None
    ) -> str:
        self.count += 1
        token = f"{self.base}.{self.count}"
        self.table.setdefault(token, []).append((node, expected, argv))
        return token

    def on_spawn(
        self, identity: str, python: bool, env: object, argv: list[str], replaces: bool = False
    ) -> None:
        """The egress guard saw a child about to start (on the spawning thread), or, with
        ``replaces`` (``os.exec*``), this process about to become another program.

        Another program gets a token too: Python it runs in turn (a hook, ``make``) then
        hangs under it. A fork that runs no recorder of its own (``os.spawn*``'s, a
        ``preexec_fn``'s) leaves the token its parent gave it alone."""
        if _getpid() != self.pid:
            return
        outcome = OUTCOME_UNTRACED_CHILD if python else OUTCOME_PROGRAM
        node = self.tracer.record_os_event(OS_SUBPROCESS, identity, outcome, _getframe(1))
        if not replaces:
            self.spawned(node, env, python, tuple(argv))
            return
        token = self.child_token
        if token is None:
            return  # the session's own process: nothing to send
        # A recorded child (a fork, typically: pty.fork + exec) ends here: what it did so
        # far goes to its parent now, and Python it becomes reports under the same token.
        token = _process_token() or token
        if python and env is None and node is not None and node.ntype == NODE_OS_EVENT:
            _putenv(ENV, self._value(token))
            self._continued_by = node
        self.ship()

    def on_egress(self, kind: str, target: str, outcome: str) -> None:
        self.tracer.record_os_event(kind, target, outcome, _getframe(1))

    def spawned(
        self,
        node: Node | None,
        env: object,
        python: bool = True,
        argv: tuple[str, ...] | None = None,
    ) -> None:
        """Hand the child that ``node`` starts a token: a token of its own when it inherits
        the environment (set with ``putenv`` only, so ``os.environ``, which tests copy,
        keeps the phase's token and never a spawn's), or the token an explicit environment
        was copied with."""
        if node is None:
            return
        if env is None:
            _putenv(ENV, self._value(self._token_for(node, python, argv)))
            return
        token = None
        if type(env) is dict or env is _environ:
            value = env.get(ENV)
            if type(value) is str:
                token = parse_value(value)[0]
        if token:
            self.table.setdefault(token, []).append((node, python, argv))
        elif python:
            self.unreachable.append(node)

    # -- forks and multiprocessing -------------------------------------------------------

    def before_fork(self, frame: Any) -> None:
        """In the forking thread, before ``os.fork``: the child's token, and its node."""
        self.fork_token = None
        starting = getattr(self._local, "starting", None)
        if starting is not None:
            self.fork_token = starting  # multiprocessing "fork": Process.start made the node
            return
        if frame is not None:
            module = frame.f_globals.get("__name__")
            if module == "subprocess" or (module == "os" and frame.f_code.co_name == "_spawnvef"):
                return  # exec follows at once: the egress guard records the program
        node = self.tracer.record_os_event(
            OS_SUBPROCESS, FORK_IDENTITY, OUTCOME_UNTRACED_CHILD, frame
        )
        if node is not None:
            self.fork_token = self._token_for(node)

    def after_fork_in_child(self) -> None:
        """In a forked child: forget the parent's tree and record afresh, for the token."""
        token = self.fork_token
        self.fork_token = None
        if token is None:
            return
        self.pid = _getpid()
        self.serial = 0
        self.child_token = token
        self._shipped_by = None
        self._continued_by = None
        self.late = self.errors = 0
        self.begin_phase()
        self.tracer.begin_phase()
        self._started(token)
        _install_exit_hooks()

    def process_starting(self, process: Any, frame: Any) -> str | None:
        """``multiprocessing`` is starting ``process``: its node and token (the token rides
        on the process object, which spawn and forkserver pickle to the child)."""
        node = self.tracer.record_os_event(
            OS_SUBPROCESS, MULTIPROCESSING_IDENTITY, OUTCOME_UNTRACED_CHILD, frame
        )
        if node is None:
            return None
        token = self._token_for(node)
        setattr(process, _TOKEN_ATTRIBUTE, token)
        return token

    def _wrap_process_start(self) -> None:
        import multiprocessing.process

        cls = multiprocessing.process.BaseProcess
        original = cls.__dict__["start"]
        children = self

        def start(process: Any) -> None:
            token = None
            if _ACTIVE is children:
                try:
                    token = children.process_starting(process, _getframe(1))
                except Exception:
                    children.errors += 1
            if token is None:
                return original(process)  # type: ignore[no-any-return]
            local = children._local
            previous = getattr(local, "starting", None)
            local.starting = token
            try:
                return original(process)  # type: ignore[no-any-return]
            finally:
                local.starting = previous

        start.__wrapped__ = original  # type: ignore[attr-defined]
        self._start_original = (cls, original)
        cls.start = start  # type: ignore[method-assign,assignment]

    def activate(self) -> None:
        """Become the process's recorder of children: fork hooks and ``Process.start``."""
        global _ACTIVE
        _hook_forks()
        self._previous = _ACTIVE
        _ACTIVE = self
        self._wrap_process_start()

    # -- phase end -----------------------------------------------------------------------

    def end_phase(self, capture: PhaseCapture) -> None:
        """Hang the captures of this phase's children under the nodes that started them, and
        turn what is known about each child into the phase's reasons."""
        table, self.table = self.table, {}
        unreachable, self.unreachable = self.unreachable, []
        if not table and not unreachable and self.errors == 0:
            # No child seen this phase: one stat instead of a listing when nothing arrived
            # (a child started from C, unseen, is then found by a later listing, as late).
            try:
                stamp = _stat(self.folder).st_mtime_ns
            except OSError:
                return
            if stamp == self._listed_at:
                return
        try:
            self._listed_at = _stat(self.folder).st_mtime_ns
            names = sorted(_listdir(self.folder))
        except OSError:
            names = []
        captures: dict[str, list[str]] = {}
        markers: dict[str, int] = {}
        mine = f"{self.pid}."
        for name in names:
            token, sep, rest = name.partition("~")
            if not sep:
                continue
            if rest.endswith(".started"):
                if token in table or token == self.base or token.startswith(self.base + "."):
                    markers[token] = markers.get(token, 0) + 1
                    try_remove(self.folder, name)
                continue
            if not rest.endswith(".json"):
                continue
            if token in table or token == self.base or token.startswith(self.base + "."):
                captures.setdefault(token, []).append(name)
            elif token.startswith(mine):
                self.late += 1  # its phase ended while it ran: disclosed there
                try_remove(self.folder, name)
        reasons = set(capture.reasons)
        recorded: dict[int, Node] = {}
        missing: dict[int, Node] = {id(node): node for node in unreachable}
        # A spawn inside a subtest block hangs in the subtest's tree, exported already: its
        # child cannot be attached any more, so it stays a gap of this phase.
        in_tree = _os_event_nodes(capture.root) if table else set()
        for token in sorted(table):
            spawns = table[token]
            nodes = [node for node, _, _ in spawns]
            if not all(id(node) in in_tree for node in nodes):
                self._load(captures.pop(token, []), set())
                missing.update((id(node), node) for node, python, _ in spawns if python)
                continue
            loaded = self._load(captures.pop(token, []), reasons)
            got: dict[int, int] = {}
            more: dict[int, int] = {}
            for root, argv, continued in loaded:
                node = _spawner(spawns, argv)
                if node is None:  # several spawns share the token and the arguments
                    reasons.add(f"{REASON_UNATTRIBUTED}:process")
                    self._attach(capture.root, root)
                else:
                    self._attach(node, root)
                    got[id(node)] = got.get(id(node), 0) + 1
                    more[id(node)] = more.get(id(node), 0) + continued
            started = markers.get(token, 0) > len(loaded)
            wanted: dict[int, int] = dict(more)
            for node, python, _ in spawns:
                if python:
                    wanted[id(node)] = wanted.get(id(node), 0) + 1
            for node, python, _ in spawns:
                if not python:
                    continue
                if got.get(id(node), 0) >= wanted[id(node)]:
                    recorded[id(node)] = node
                    continue
                missing[id(node)] = node
                if started:
                    reasons.add(f"{REASON_CHILD_UNFINISHED}:{_identity(node)}")
        for token in sorted(captures):  # a child no spawn was seen for (spawned from C)
            for root, _, _ in self._load(captures[token], reasons):
                if root.children or root.thread_roots:
                    reasons.add(f"{REASON_UNATTRIBUTED}:process")
                    self._attach(capture.root, root)
        bad = {_identity(node) for node in missing.values()}
        good: set[str] = set()
        for key, node in recorded.items():
            if key in missing or node.ntype != NODE_OS_EVENT:
                continue  # not whole, or the truncation sink (the phase says truncated)
            _, kind, target_text, _outcome = node.key
            node.key = ("os", kind, target_text, OUTCOME_RECORDED_CHILD)
            good.add(target_text)
        for identity in good - bad:
            reasons.discard(f"{REASON_UNTRACED_SUBPROCESS}:{identity}")
        if self.errors:
            reasons.add(f"{REASON_CHILDREN_ERROR}:{self.errors}")
            self.errors = 0
        capture.reasons = sorted(reasons)
        try:
            self._listed_at = _stat(self.folder).st_mtime_ns  # after this phase's removals
        except OSError:
            self._listed_at = -1

    def _load(
        self, names: list[str], reasons: set[str]
    ) -> list[tuple[Node, tuple[str, ...] | None, int]]:
        """The trees of these capture files (removed once read), in content order, so that
        the genome does not depend on which child finished first; their reasons and
        symbols join this process's."""
        read: list[tuple[str, dict[str, Any]]] = []
        for name in names:
            path = f"{self.folder}/{name}"
            try:
                data = _json_loads(read_file(path))
            except (OSError, ValueError):
                reasons.add(REASON_CHILD_UNREADABLE)
                continue
            finally:
                try_remove(self.folder, name)
            read.append((_json_dumps(data.get("tree"), sort_keys=True), data))
        read.sort(key=lambda item: item[0])
        roots: list[tuple[Node, tuple[str, ...] | None, int]] = []
        for _, data in read:
            try:
                root = load_tree(data["tree"], self.tracer, self.bounds)
                argv = data.get("argv")
                arguments = tuple(str(a) for a in argv) if isinstance(argv, list) else None
                continued = int(data.get("continued") or 0)
                for symbol in data.get("symbols") or []:
                    if isinstance(symbol, dict):
                        self.tracer.add_symbol(symbol)
            except Exception:
                reasons.add(REASON_CHILD_UNREADABLE)
                continue
            reasons.update(CHILD_REASON_PREFIX + str(r) for r in data.get("reasons") or [])
            roots.append((root, arguments, continued))
        return roots

    @staticmethod
    def _attach(node: Node, root: Node) -> None:
        root.via = VIA_PROCESS
        node.thread_roots.append(root)

    # -- in a recorded child -----------------------------------------------------------

    def _started(self, token: str) -> None:
        write_file(self.folder, f"{token}~{self.pid}-{_IMAGE}.started", b"")

    def enter_child(self, token: str) -> None:
        """This process is a recorded child: mark it started, send its tree at exit."""
        self.child_token = token
        self._started(token)
        _install_exit_hooks()

    def ship(self) -> None:
        """Write this child's tree for its parent (once per process; never in the session)."""
        token = self.child_token
        pid = _getpid()
        if token is None or self._shipped_by == pid or pid != self.pid:
            return
        self._shipped_by = pid
        token = _process_token() or token
        for node in list(self.tracer._active.values()):
            # Still running as the process ends (``os._exit`` inside a call, a daemon
            # thread): an exit of its own, so that entries and exits still add up.
            if node.ntype == NODE_CALL and node.key is not None:
                node.exits[EXIT_PROCESS_ENDED] = node.exits.get(EXIT_PROCESS_ENDED, 0) + 1
        capture = self.tracer.end_phase()
        self.end_phase(capture)
        continued = self._continued_by
        if continued is not None:
            _, kind, target, _outcome = continued.key
            continued.key = ("os", kind, target, OUTCOME_RECORDED_CHILD)
            capture.reasons = [
                r
                for r in capture.reasons
                if r != f"{REASON_UNTRACED_SUBPROCESS}:{_identity(continued)}"
            ]
        reasons = list(capture.reasons)
        if self.tracer.errors:
            reasons.append(f"{REASON_TRACER_ERROR}:{self.tracer.errors}")
        tree, symbols = dump_tree(capture.root)
        known = self.tracer.symbols
        data = {
            "token": token,
            # What the parent saw the child started with: ``python ARGS`` gives ARGS.
            "argv": list(getattr(sys, "orig_argv", sys.argv))[1:],
            "continued": 1 if continued is not None else 0,
            "reasons": sorted(reasons),
            "symbols": [known[s] for s in sorted(symbols) if s in known],
            "tree": tree,
        }
        name = f"{token}~{pid}-{_IMAGE}.json"
        write_file(self.folder, name + ".part", _json_dumps(data).encode("utf-8"))
        _replace(f"{self.folder}/{name}.part", f"{self.folder}/{name}")

    # -- session end -------------------------------------------------------------------

    def close(self) -> None:
        """Undo everything (in the process that opened it only: a forked child that runs on
        must not remove the session's hook)."""
        global _ACTIVE
        if _getpid() != self.owner:
            return
        if _ACTIVE is self:
            _ACTIVE = self._previous
        saved = self._start_original
        if saved is not None:
            saved[0].start = saved[1]  # type: ignore[attr-defined]
            self._start_original = None
        if self._saved_env is None:
            _environ.pop(ENV, None)
            # A spawn's token went to the C environment only (putenv): when os.environ no
            # longer holds the name, popping it there unsets nothing, and every later child of
            # this process would still look for this session.
            with contextlib.suppress(OSError):
                _unsetenv(ENV)
        else:
            _environ[ENV] = self._saved_env
        if self.pth is not None:
            with contextlib.suppress(OSError):
                _remove(self.pth)
            self.pth = None
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def _spawner(
    spawns: list[tuple[Node, bool, tuple[str, ...] | None]], argv: tuple[str, ...] | None
) -> Node | None:
    """The spawn a capture came from: the one node that handed out its token, or among
    several, the one whose child had these arguments (a script run directly also has the
    interpreter and the script's path before them); None when that does not decide it."""
    distinct = {id(node): node for node, _, _ in spawns}
    if len(distinct) == 1:
        return next(iter(distinct.values()))
    if argv is None:
        return None
    matching = {
        id(node): node
        for node, _, given in spawns
        if given is not None and (argv == given or (given and argv[-len(given) :] == given))
    }
    return next(iter(matching.values())) if len(matching) == 1 else None


def _os_event_nodes(root: Node) -> set[int]:
    """Ids of the OS event nodes of a tree, thread and task subtrees included."""
    found: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.ntype == NODE_OS_EVENT:
            found.add(id(node))
        stack.extend(node.children.values())
        stack.extend(node.thread_roots)
    return found


def _identity(node: Node) -> str:
    """The program a spawn event names (``?`` for the truncation sink, which has none)."""
    return str(node.key[2]) if node.ntype == NODE_OS_EVENT else "?"


def _process_token() -> str | None:
    """The token multiprocessing's parent put on this child's process object, if any."""
    module = sys.modules.get("multiprocessing.process")
    if module is None:
        return None
    current = getattr(module, "_current_process", None)
    token = getattr(current, _TOKEN_ATTRIBUTE, None)
    return token if type(token) is str else None


# -- process-wide hooks (installed once, inert while no recorder is active) ------------------


def _before_fork() -> None:
    children = _ACTIVE
    if children is not None and children.tracer.recording:
        try:
            children.before_fork(_getframe(1))
        except Exception:
            children.errors += 1


def _after_fork_in_parent() -> None:
    children = _ACTIVE
    if children is not None:
        children.fork_token = None


def _after_fork_in_child() -> None:
    children = _ACTIVE
    if children is not None and children.fork_token is not None:
        try:
            children.after_fork_in_child()
        except Exception:
            children.child_token = None  # not recorded: the parent discloses it


def _hook_forks() -> None:
    global _FORK_HOOKED
    if not _FORK_HOOKED and hasattr(os, "register_at_fork"):  # no fork on Windows
        os.register_at_fork(
            before=_before_fork,
            after_in_parent=_after_fork_in_parent,
            after_in_child=_after_fork_in_child,
        )
        _FORK_HOOKED = True


def _ship_active() -> None:
    children = _ACTIVE
    if children is not None:
        # On failure the parent sees no capture and discloses this child.
        with contextlib.suppress(BaseException):
            children.ship()


def _install_exit_hooks() -> None:
    """In a recorded child only: send the tree at interpreter exit and at ``os._exit``
    (which multiprocessing's forked children end with, and tests use to leave quickly)."""
    global _EXIT_WRAPPED, _ATEXIT_REGISTERED
    if not _ATEXIT_REGISTERED:
        atexit.register(_ship_active)
        _ATEXIT_REGISTERED = True
    if not _EXIT_WRAPPED:
        original = os._exit

        def _exit(status: int) -> Any:
            _ship_active()
            original(status)

        os._exit = _exit
        _EXIT_WRAPPED = True


def open_session(tracer: Tracer, bounds: Bounds, config: dict[str, Any]) -> Children:
    """Make the capture folder and the hook for this session's children, and become the
    process's recorder of children. Undone by ``Children.close``."""
    import tempfile

    remove_stale_folders(tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{_getpid()}-")
    children = Children(tracer, folder, bounds)
    try:
        write_file(folder, CONFIG_NAME, _json_dumps(config).encode("utf-8"))
        children.pth = install_hook()
        children.activate()
    except BaseException:
        children.close()
        raise
    return children
