"""What a recorded child process sends back (#11): its calling-context tree as plain data,
and the files it travels in.

The tree goes *before export* (values as their canonical forms), flat and parents first, so
that neither side recurses; the parent rebuilds it with its own stand-ins for the child's code
objects and exports it with its own. The files are read and written through ``os`` functions
bound at import: a test's fixture may still have ``open`` patched when its phase ends.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Final

from diffgenome.recording.collect.contract import NODE_CALL, Bounds, CodeInfo, Node, StateSet

if TYPE_CHECKING:
    from diffgenome.recording.collect.tracer import Tracer

_remove = os.remove
_open = os.open
_write = os.write
_read = os.read
_close = os.close
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def dump_tree(root: Node) -> tuple[list[list[Any]], set[str]]:
    """A phase tree as a flat list (parents first, so no recursion either way) and the
    symbols it names. Call nodes are named by symbol and path: the parent maps them again."""
    entries: list[list[Any]] = []
    symbols: set[str] = set()
    stack: list[tuple[Node, int, str]] = [(root, -1, "")]
    while stack:
        node, parent, via = stack.pop()
        index = len(entries)
        key = node.key
        if node.ntype == NODE_CALL:
            if key is None:
                wire_key: Any = None
            else:
                symbols.add(key.symbol)
                wire_key = [key.symbol, key.origin, key.kind, key.line, key.path]
        else:
            wire_key = list(key)
        state = node.state
        entries.append(
            [
                parent,
                via,
                node.ntype,
                wire_key,
                node.count,
                node.returned,
                node.yielded,
                node.exits,
                _dump_values(node.args),
                _dump_values(node.results),
                None if state is None else [sorted(state.facts), state.overflow],
                sorted(node.branches.items()),
                sorted(node.flags) if node.flags else None,
            ]
        )
        for child in node.children.values():
            stack.append((child, index, ""))
        for side in node.thread_roots:
            stack.append((side, index, side.via or "thread"))
    return entries, symbols


def _dump_values(bounded: Any) -> list[Any]:
    seen = [[shape, None if form is None else form.hex()] for shape, form in bounded._seen]
    return [seen, bounded._count, bounded._sum]


def _load_values(bounded: Any, wire: list[Any]) -> None:
    seen, count, total = wire
    bounded._seen = {
        (str(shape), None if form is None else bytes.fromhex(form)): None for shape, form in seen
    }
    bounded._overflow = None
    if count or total:
        bounded._fold(int(count), int(total))


def load_tree(entries: list[list[Any]], tracer: Tracer, bounds: Bounds) -> Node:
    """The tree ``dump_tree`` wrote, with call nodes keyed by this process's stand-ins for
    the child's code objects (``Tracer.surrogate_info``)."""
    nodes: list[Node] = []
    infos: dict[tuple[Any, ...], CodeInfo] = {}
    rootdir = tracer.scope.rootdir
    for entry in entries:
        (parent, via, ntype, key, count, returned, yielded, exits, args, results, state) = entry[
            :11
        ]
        branches, flags = entry[11], entry[12]
        node_key: Any
        if key is None:
            node_key = None
        elif ntype == NODE_CALL:
            symbol, origin, kind, line, path = key
            ident = (symbol, path)
            info = infos.get(ident)
            if info is None:
                info = infos[ident] = tracer.surrogate_info(
                    str(symbol), rootdir + str(path), str(origin), str(kind), int(line), str(path)
                )
            node_key = info
        else:
            node_key = tuple(key)
        node = Node(int(ntype), node_key, bounds)
        node.count = int(count)
        node.returned = int(returned)
        node.yielded = int(yielded)
        node.exits = {str(k): int(v) for k, v in exits.items()}
        _load_values(node.args, args)
        _load_values(node.results, results)
        if state is not None:
            node.state = StateSet(bounds.state)
            node.state.facts = {(str(a), str(b), str(c)) for a, b, c in state[0]}
            node.state.overflow = int(state[1])
        node.branches = {int(k): int(v) for k, v in branches}
        node.flags = set(flags) if flags else None
        if parent >= 0:
            above = nodes[parent]
            if via:
                node.via = str(via)
                above.thread_roots.append(node)
            else:
                above.children[len(nodes)] = node
        elif nodes:
            raise ValueError("a capture has two roots")
        nodes.append(node)
    if not nodes:
        raise ValueError("an empty capture")
    return nodes[0]


def try_remove(folder: str, name: str) -> None:
    with contextlib.suppress(OSError):
        _remove(f"{folder}/{name}")


def read_file(path: str) -> bytes:
    """The whole file, through ``os`` functions bound at import (a test's fixture may still
    have ``open`` patched when its phase ends)."""
    fd = _open(path, _READ_FLAGS)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = _read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        _close(fd)


def write_file(folder: str, name: str, data: bytes, mode: int = 0o600) -> None:
    fd = _open(f"{folder}/{name}", _WRITE_FLAGS, mode)
    try:
        view = memoryview(data)
        while view:
            written = _write(fd, view)
            view = view[written:]
    finally:
        _close(fd)
