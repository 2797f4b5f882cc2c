"""Format names and the one rule every reader applies before anything else."""

from __future__ import annotations

from diffgenome.protocol.errors import UserError

# genome/2: decision sites are named by what they test, not by their order (docs/protocol.md).
GENOME_FORMAT = "diffgenome-genome/2"
# Genome versions this reader still reads (a /1 document keeps its positional site ids).
GENOME_FORMATS_READ = ("diffgenome-genome/1", GENOME_FORMAT)
# diff/3: the ``restructured`` status and each test's ``structure`` (what a refactor moved);
# diff/2 added ``touched`` and the seam of stand-ins; site ids as in genome/2.
DIFF_FORMAT = "diffgenome-diff/3"
# store/4: a stored phase body's decision records leave out their kind, symbol and predicate,
# kept once per store (the ``sites`` table; store/compact.py); store/3: a finished run's
# test rows and symbols stored once per manifest address, a run naming the run that holds them
# (store/manifests.py); store/2: each phase's genome stored once by its content address
# (docs/protocol.md). An older store is upgraded in place by the first writer that opens it,
# and read as it is by readers.
STORE_FORMAT = "diffgenome-store/4"
STORE_FORMATS_READ = (
    "diffgenome-store/1",
    "diffgenome-store/2",
    "diffgenome-store/3",
    STORE_FORMAT,
)


class FormatError(UserError, ValueError):
    """A document or store of a format or major version this reader does not know.

    The message is one line that says what was found and what to do, because it is shown to
    the user as is.
    """


def split_format(value: object) -> tuple[str, int] | None:
    """``"diffgenome-genome/1"`` -> ``("diffgenome-genome", 1)``; None when malformed."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    name, _, major = value.partition("/")
    if not name or not major.isdigit():
        return None
    return name, int(major)


def genome_format_of(run_config: object) -> str:
    """The genome format a stored run was recorded in: runs that do not say are /1."""
    if isinstance(run_config, dict):
        value = run_config.get("genome_format")
        if isinstance(value, str) and value in GENOME_FORMATS_READ:
            return value
    return GENOME_FORMATS_READ[0]


def check_store_format(value: object) -> None:
    """Accept every store layout this reader reads; refuse others in one line."""
    if value in STORE_FORMATS_READ:
        return
    check_format(value, STORE_FORMAT)


def check_genome_format(value: object) -> None:
    """Accept every genome version this reader reads; refuse others in one line."""
    if value in GENOME_FORMATS_READ:
        return
    check_format(value, GENOME_FORMAT)


# How symbols are named within genome/2. 5: a decision's identity always takes the compound
# statements that enclose it (``if:true``, ``for``, ``except ClickException``...), so a
# look-alike added elsewhere never renames it; 4: ``@typing.overload`` stubs apart from the function
# they describe (``f[overload]``, ``f[overload]#1``), which no longer counts them in its
# ordinal; 3: lambdas and generator expressions by content and by where they are bound
# (``f.<locals>.<lambda>[<digest>]``); 2: by content alone; 1 (runs that do not say) numbered
# them in source order. A reader of one run needs nothing of this; a comparison of two runs
# does.
NAMING = 5

# The revision of the secret rules (diffgenome/recording/collect/redact.py) that masked the
# text a run keeps in clear, test ids among it: under another revision the same test may
# carry another id. 1 (added 2026-12-02): the first; runs that do not say masked nothing,
# and kept warning messages as text.
SECRET_RULES = 1


# How values are digested within genome/2 (the canonical forms of
# diffgenome/recording/collect/values.py). 2 (added 2026-12-03): the standard library's
# value types (``timedelta``, ``date``, ``datetime``, ``time``, ``timezone``, ``ZoneInfo``,
# ``Decimal``, ``UUID``, ``Fraction``) have forms of their own, where 1 (runs that do not say)
# gave them none (a null digest). The same value may have a digest under one revision and
# none under the other: a comparison would read that as a change. 3: a state fact of
# ``self.X`` that the instance does not hold while its class defines ``X`` (a class attribute,
# a method) is ``class attribute``, where 2 said ``absent``. 4: a field a method changes in
# place (``self.n += 1``) is state, read before the change, where 3 did not record it. 5: an
# exception has a form (its class and args) and a call that raises keeps it among its
# results; a ``__hash__`` records no receiver state, as its results are kept by shape only (a
# hash it caches, cachetools' ``_HashedTuple.__hashvalue``, is as salted as the one it returns).
# 6: an overflowing value's form of at most 64 bytes (tagged) is hashed into its set's
# fingerprint by a polynomial over 2**61 - 1 and a mixer (values.overflow_hash) where 5 used
# BLAKE2b: the same values give other ``*_overflow`` digests.
# 7: a node keeps up to 256 state facts where 6 kept 32 (``state_facts_per_node``): a set
# that overflowed at 32 keeps other facts under 7, so the same call reads as changed.
VALUES = 7


# What a test's code did to the world through the standard library, per phase (its
# ``effects``: output, log records, warnings, files written, environment changes;
# recording/effects.py). 1 (added 2026-12-02): the first; runs that do not say recorded none,
# and a test record without ``effects`` is read as "not recorded", never as "no effects".
# 2: a subtest records its own printed output (its report's sections) and says its other kinds
# are its test's (``<kind>:in-test``), where 1 recorded no effects for a subtest: beside a run
# of 2, a subtest of a run of 1 reads "not recorded" for its output (disclosed, as a run of no
# revision does for every test).
# 3: an archive a test writes (gzip, zip, tar, and a tar inside gzip, bzip2 or xz) is digested
# by what it holds, without the times its format stamps into its bytes
# (recording/archives.py), where 2 digested its bytes: the same archive has another digest
# under each, so written files are not compared across that line
# (:func:`archive_digests_comparable`).
# 4: a phase's ``output`` begins with the text the test took itself through ``capsys`` or
# ``capfd`` (``readouterr``), where 3 said ``output:test-captures`` and recorded only what
# reached pytest's sections: beside a run of 3, such a test's output reads "not recorded" on
# that side (disclosed), and runs are not reused across the line.
EFFECTS = 4
#: The effects revision from which archives are digested by their content.
ARCHIVE_CONTENT = 3


def effects_of(run_config: object) -> int | None:
    """The effects revision a run was recorded with (None: it recorded no effects)."""
    if isinstance(run_config, dict):
        value = run_config.get("effects")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def archive_digests_comparable(base_config: object, head_config: object) -> bool:
    """Whether the digests of the files two runs wrote mean the same for archives: both
    digest them by their content (effects revision 3 on) or both by their bytes. Runs that
    recorded no effects have no files to compare."""
    base, head = effects_of(base_config), effects_of(head_config)
    if base is None or head is None:
        return True
    return (base >= ARCHIVE_CONTENT) == (head >= ARCHIVE_CONTENT)


def values_of(run_config: object) -> int:
    """The values revision a run was recorded with (runs that do not say: 1)."""
    if isinstance(run_config, dict):
        value = run_config.get("values")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1


def naming_of(run_config: object) -> int:
    """The naming revision a run was recorded with (runs that do not say: 1)."""
    if isinstance(run_config, dict):
        value = run_config.get("naming")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1


def check_comparable(
    base_format: object,
    head_format: object,
    base_naming: int = NAMING,
    head_naming: int = NAMING,
    base_values: int = VALUES,
    head_values: int = VALUES,
) -> None:
    """Two genomes compare only within one version, one naming revision and one values
    revision: their decision ids, the names of their anonymous code, or the digests of some
    of their values mean different things."""
    if base_format != head_format:
        raise FormatError(
            f"base is {base_format} and head is {head_format}, whose decision ids are not "
            "comparable; record both again with this diffgenome (diffgenome diff --rerecord)"
        )
    if base_naming != head_naming:
        raise FormatError(
            f"base names its code by naming revision {base_naming} and head by "
            f"{head_naming}, which are not comparable; record both again with this "
            "diffgenome (diffgenome diff --rerecord)"
        )
    if base_values != head_values:
        raise FormatError(
            f"base digests its values by values revision {base_values} and head by "
            f"{head_values} (one gives some values a digest the other does not), which are "
            "not comparable; record both again with this diffgenome (diffgenome diff --rerecord)"
        )


def check_format(value: object, expected: str) -> None:
    """Refuse anything but the expected format name at the expected major version."""
    want = split_format(expected)
    assert want is not None
    got = split_format(value)
    if got is None:
        raise FormatError(
            f"not a {want[0]} document (format field is {value!r}); expected {expected!r}"
        )
    if got[0] != want[0]:
        raise FormatError(f"this is a {got[0]!r} document, expected {want[0]!r}")
    if got[1] != want[1]:
        raise FormatError(
            f"unsupported version {got[0]}/{got[1]}: this diffgenome reads {expected}; "
            "upgrade diffgenome or re-record with this version"
        )
