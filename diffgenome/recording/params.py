"""A parametrized test's values as keyed digests: the ``params`` of its record, which pair
``test[kwargs18]`` with ``test[kwargs20]`` when cases were inserted before it.
"""

from __future__ import annotations

import re
from types import BuiltinFunctionType, ModuleType

import pytest

from diffgenome.recording.collect import stable, values


def param_digests(
    item: pytest.Item, digester: values.Digester, memo: dict[tuple[type, object], str | None]
) -> dict[str, str | None] | None:
    """The keyed digest of each of a parametrized test's values, by argument name. pytest
    names a case it cannot print by its position (``kwargs18``), which inserting a case
    shifts; the values themselves do not shift.

    ``memo``: the digests of plain scalars already seen (a parametrized suite passes the same
    few values to thousands of cases: packaging's version strings), by type and value, so
    that ``True`` and ``1`` stay apart."""
    try:
        params = item.callspec.params  # type: ignore[attr-defined]
        if not isinstance(params, dict) or not params:
            return None
        out: dict[str, str | None] = {}
        for name in sorted(params):
            value = params[name]
            kind = type(value)
            if kind in _MEMO_TYPES or (kind is BuiltinFunctionType and _module_level(value)):
                key = (kind, value)
                if key in memo:
                    out[str(name)] = memo[key]
                    continue
                if len(memo) >= _PARAM_MEMO_SIZE:
                    memo.clear()
                out[str(name)] = memo[key] = _param_digest(value, digester)
            else:
                out[str(name)] = _param_digest(value, digester)
        return out
    except Exception:  # not parametrized (no callspec), or a value that resists reading
        return None


#: Parameter types whose value alone decides the digest (immutable, equal means same form).
#: A module's builtin function (``operator.lt``: packaging's 50,784 comparison tests) is
#: remembered too: its digest is its ``repr``'s, fixed for the session, and remembering it
#: keeps alive only what its module does (a bound builtin method, which would keep its
#: receiver, is digested each time).
_MEMO_TYPES = frozenset((str, bytes, int, bool, type(None)))


def _module_level(function: BuiltinFunctionType) -> bool:
    owner = getattr(function, "__self__", None)
    return owner is None or type(owner) is ModuleType


_PARAM_MEMO_SIZE = 65536


def _param_digest(value: object, digester: values.Digester) -> str | None:
    """The digest of the value's canonical form; for a value that has none (a ``timedelta``:
    humanize's ``test_input33``), of its ``repr`` made stable, unless that names an address
    (None: its equality is unknown)."""
    digest = digester.digest_value(value)
    if digest is not None:
        return digest
    text = stable.stable_text(_repr(value))
    if _ADDRESS.search(text):
        return None
    return digester.digest(b"repr:" + text.encode("utf-8", "surrogatepass"))


_repr = repr
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
