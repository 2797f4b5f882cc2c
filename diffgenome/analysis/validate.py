"""What was read checked against its format before anything uses it: a genome document (a
stored run's, a file's, a shard's) or one of its parts, else one line of the user error of
the command that read it, saying what to record again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from diffgenome.analysis.models import genome_problem
from diffgenome.protocol.errors import UserError
from diffgenome.protocol.formats import GENOME_FORMAT

#: What a refusal ends with: the command reads only what this diffgenome can.
_THIS = "with this diffgenome"


def validated_genome(
    document: dict[str, Any],
    what: str,
    error: Callable[[str], UserError],
    *,
    again: str,
    noun: str = f"{GENOME_FORMAT} document",
    trusted: Callable[[object], bool] | None = None,
) -> dict[str, Any]:
    """``document``, when it is a valid genome document (:func:`genome_problem`, which skips
    the phases ``trusted`` vouches for); else ``error`` of one line: ``what`` is not a valid
    ``noun`` (where: why); ``again`` (what to record again) with this diffgenome."""
    problem = genome_problem(document, trusted)
    if problem is not None:
        where, msg = problem
        raise error(f"{what} is not a valid {noun} ({where}: {msg}); {again} {_THIS}")
    return document


def validated[M: BaseModel](
    model: type[M], data: object, what: str, error: Callable[[str], UserError], *, again: str
) -> M:
    """``data`` as a ``model`` of the genome format (a run, a test record); else ``error`` of
    one line: ``what`` is not valid genome format (the first problem, and how many more);
    ``again`` with this diffgenome."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(
            f"{what} is not valid {GENOME_FORMAT} ({validation_message(exc)}); {again} {_THIS}"
        ) from None


def validation_message(exc: ValidationError) -> str:
    """A validation error in one line: where the first problem is, what it is, and how many
    more there are."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "document"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


__all__ = ["validated", "validated_genome", "validation_message"]
