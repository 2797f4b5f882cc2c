"""Recording a side: ``python -m pytest --genome`` in a tree, as a new run of the store.

Every recording of a diff runs in one environment, byte for byte
(:meth:`Recordings.environment`, docs/diffing.md "One environment"), with the same pytest
arguments (:meth:`Recordings.selection`), which the recording key hashes: a stored run with
that key, recorded in that environment, is what a new recording would be (``reuse.py``).

The recording runs in the target interpreter with the recorded tree's source root first on
``PYTHONPATH`` and a copy of the recording side after it, so that neither an editable
install of the checkout nor a missing diffgenome can change what runs. Whatever the user can
fix comes out as a one-line :class:`DiffError`; the child processes are stopped on every
way out, Ctrl-C included (``process.py``).

Which sides are recorded, and which tests confirmation records again, is ``sides.py``'s and
``confirm.py``'s: this module records what it is asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence

from diffgenome.analysis.progress import Progress
from diffgenome.analysis.record.core import CoreSupply
from diffgenome.analysis.record.core import apply as apply_core
from diffgenome.analysis.record.git import Repository
from diffgenome.analysis.record.interpreter import PLUGIN_MODULE, Target, environment, probed
from diffgenome.analysis.record.process import DiffError, run_child
from diffgenome.analysis.record.pytest_output import PytestProgress, pytest_error
from diffgenome.analysis.record.worktree import Checkouts, Workspace
from diffgenome.protocol.runs import (
    COPIED_ENV,
    ENVIRONMENT_ENV,
    HOLDER_ENV,
    ORIGIN_CONFIRMATION,
    RUN_ID_ENV,
    new_run_id,
)
from diffgenome.protocol.selection import ORIGIN_ENV
from diffgenome.protocol.vocab import IMPORT_TEST_ID
from diffgenome.store.holds import StoreUse
from diffgenome.store.key import KEY_FILE

# The project's pytest must not leave a cache in the user's checkout when WORKTREE is
# recorded in place (a repository without a commit; bytecode is kept out with
# PYTHONDONTWRITEBYTECODE).
FIXED_PYTEST_ARGS = ("-p", "no:cacheprovider")
# pytest's exit codes that mean "the tests could not be run as asked".
_PYTEST_FAILED_TO_RUN = {2: "was interrupted", 3: "hit an internal error", 4: "usage error"}
_NO_TESTS = 5


class Recordings:
    """How and where one diff records: the target interpreter (probed once, before the
    first recording, when the store's writer is opened too), the pytest arguments, the
    environment, and each recording as a new run."""

    def __init__(
        self,
        python: str,
        pytest_args: Sequence[str],
        repo: Repository | None,
        store: StoreUse,
        checkouts: Checkouts,
        progress: Progress,
    ) -> None:
        self.python = python
        self.pytest_args = tuple(pytest_args)
        self.repo = repo
        self.store = store
        self.checkouts = checkouts
        self.progress = progress
        self._target: Target | None = None
        self._core: CoreSupply | None = None  # what the probe's workspace got (record/core.py)

    @property
    def target(self) -> Target:
        """The target interpreter, once :meth:`selection` probed it."""
        assert self._target is not None
        return self._target

    def selection(
        self, workspace: Workspace, pytest_args: Sequence[str] | None = None
    ) -> list[str]:
        """The pytest arguments: the recording key hashes them, so they must not depend on
        anything but the user's arguments (never on the temp folder). The first call opens
        the store for writing and probes the target interpreter. ``pytest_args``: the
        user's, narrowed (a confirmation's); by default as given."""
        user = self.pytest_args if pytest_args is None else tuple(pytest_args)
        store = self.store.open_writer()
        target = self._probe(workspace)
        plugin = [] if target.has_entry_point else ["-p", PLUGIN_MODULE]
        return [
            "--genome",
            f"--genome-store={store}",
            f"--genome-key-file={os.path.join(store, KEY_FILE)}",
            *plugin,
            *FIXED_PYTEST_ARGS,
            *user,
            # After the user's arguments: a pytest --genome that ends with the same seeds is
            # the same selection, so diff can reuse it.
            *_same_examples(target, user),
            *_same_draws(user),
        ]

    def _probe(self, workspace: Workspace) -> Target:
        if self._target is None:
            # The copy of the recording side gets a compiled core for that interpreter.
            self._target, self._core = probed(self.python, workspace, self._prefix(), self.progress)
        return self._target

    def environment(
        self, workspace: Workspace, tree: str, root: str | None = None
    ) -> tuple[dict[str, str], str]:
        """The environment a recording in ``tree`` runs with, less its run id, and that
        environment's fingerprint: every variable, the folder it runs in and the ignored
        files copied in. A stored run is reused only where its fingerprint is this one
        (docs/diffing.md, "Reuse"). ``root``: the tree's source root when it is not checked
        out yet (:func:`~diffgenome.analysis.record.interpreter.source_root_of`)."""
        cwd = self._cwd(tree)
        env = environment(workspace, tree, self._prefix(), root)
        # As a shell would say it: the folder the tests run in, never the user's own.
        env["PWD"] = cwd
        # What the shell says of how diffgenome was started, not of the project: ``_`` is
        # the command's path (``time diffgenome``, ``make``, a script each set another),
        # ``SHLVL`` how deep the shells nest. Kept, they made every recording another
        # environment, so no stored run was reused.
        for variable in _SHELL_BOOKKEEPING:
            env.pop(variable, None)
        # Whether the recording is a diff's; its id would differ in every invocation, and
        # tests copy the environment into values.
        env[HOLDER_ENV] = "1"
        # The files the diff copies in are no change of the tree (protocol.runs.COPIED_ENV).
        env[COPIED_ENV] = json.dumps(self.checkouts.ignored_paths())
        # The distributions installed in the target interpreter: a dependency upgraded
        # between two diffs makes a stored run another environment's.
        packages = self._target.packages if self._target is not None else None
        # The tests get every variable; the fingerprint leaves out what a CI system sets anew
        # for each job, or a store cached from an earlier job would never be reused.
        kept = sorted((name, value) for name, value in env.items() if not per_job(name))
        text = json.dumps([kept, cwd, self.checkouts.ignored_print(), packages])
        return env, hashlib.sha256(text.encode()).hexdigest()[:24]

    def record(
        self,
        spec: str,
        tree: str,
        workspace: Workspace,
        selection: list[str],
        origin: str = "diff",
        *,
        subject: str,
    ) -> str:
        """Record ``selection`` in ``tree`` as a new run; its id. ``subject`` names the
        recording in progress (recordings made side by side are steps at the same time)."""
        assert self._target is not None
        cwd = self._cwd(tree)
        if not os.path.isdir(cwd):
            raise DiffError(
                f"{spec} has no folder {self.repo.prefix if self.repo else cwd}; run diffgenome "
                "from a folder that exists in both revisions"
            )
        run_id = new_run_id()
        self.store.begin(run_id, subject, used=origin != ORIGIN_CONFIRMATION)
        if self._core is not None:  # a confirmation's workspace has a copy of its own
            apply_core(workspace.recorder_path(), self._core)
        env, fingerprint = self.environment(workspace, tree)
        with self.progress.step("recording", "recorded", subject) as step:
            seen = PytestProgress()

            def on_output(text: str) -> None:
                seen.feed(text)
                step.advance(done=seen.done, total=seen.total, percent=seen.percent)

            code, output = run_child(
                [self._target.python, "-m", "pytest", *selection],
                cwd=cwd,
                env={
                    **env,
                    ENVIRONMENT_ENV: fingerprint,
                    ORIGIN_ENV: origin,
                    RUN_ID_ENV: run_id,
                },
                on_output=on_output,
            )
            carrying = any(arg.startswith("--genome-carry=") for arg in selection)
            # Every test carried over (the change reaches none): pytest ran nothing, and says
            # so by its status, yet the run holds what importing the tests did.
            if not (carrying and code == _NO_TESTS and run_id in self._run_ids()):
                self._check_recorded(spec, code, output, run_id)
            count = self._test_count(run_id)
            step.result = f"{count} test{'' if count == 1 else 's'} {self._core_text(run_id)}"
        return run_id

    def _prefix(self) -> str:
        return self.repo.prefix if self.repo else ""

    def _cwd(self, tree: str) -> str:
        return os.path.join(tree, self.repo.prefix) if self.repo and self.repo.prefix else tree

    def _core_text(self, run_id: str) -> str:
        """Which core recorded the run, and why the pure-Python one (progress says it)."""
        with self.store.handle.reader() as reader:
            run = reader.run(run_id)
        if run.get("core") == "c":
            return "with the compiled core"
        if run.get("core") == "python":
            # The reason in full is the report's note (pipeline.core_notes): here its word.
            reason = str(run.get("core_reason") or "no reason recorded").split(":", 1)[0]
            return f"with the pure-Python core ({reason})"
        return "(the core is not said)"

    def _check_recorded(self, spec: str, code: int, output: str, run_id: str) -> None:
        """Nothing when pytest recorded ``run_id``; else the one-line error that says why."""
        if code in _PYTEST_FAILED_TO_RUN:
            raise DiffError(
                f"the tests of {spec} could not run (pytest {_PYTEST_FAILED_TO_RUN[code]}, exit "
                f"status {code}): {pytest_error(output)}; fix the project or the pytest arguments"
            )
        if code == _NO_TESTS:
            self.store.discard(run_id)
            raise DiffError(_no_tests(spec, self._prefix()))
        if code not in (0, 1):
            raise DiffError(
                f"pytest stopped with exit status {code} in {spec}: {pytest_error(output)}; "
                "fix the project or the pytest arguments"
            )
        if run_id not in self._run_ids():
            raise DiffError(
                f"pytest ran the tests of {spec} but recorded nothing ({pytest_error(output)}); "
                "check that no -p no:diffgenome is among the pytest arguments"
            )

    def _run_ids(self) -> list[str]:
        with self.store.handle.reader() as reader:
            return [run.id for run in reader.runs()]

    def _test_count(self, run_id: str) -> int:
        """The tests a run holds, as the user counts them (``<import>`` is no test)."""
        with self.store.handle.reader() as reader:
            return sum(1 for test_id in reader.test_ids(run_id) if test_id != IMPORT_TEST_ID)


#: Variables the shell sets about itself (``OLDPWD`` the folder before the last ``cd``).
_SHELL_BOOKKEEPING = ("_", "SHLVL", "OLDPWD")

#: The families of variables GitHub Actions and GitLab CI (docs/ci.md's two recipes) set for
#: a job: its ids and number, the commit and ref it runs for, the files of its step, its
#: tokens. Each job has other values, the same suite and tree notwithstanding.
_PER_JOB_PREFIXES = ("GITHUB_", "RUNNER_", "ACTIONS_", "CI_", "GITLAB_")

#: What systemd sets for each service invocation (a CI runner started as a service).
_PER_JOB_NAMES = frozenset({"INVOCATION_ID", "JOURNAL_STREAM"})


def per_job(variable: str) -> bool:
    """Whether ``variable`` says which CI job runs rather than what it runs with: left out
    of the environment's fingerprint (docs/diffing.md, "Reuse"), never out of the tests'
    environment. A test that reads one can differ between a reused run and a new recording;
    confirmation records both sides again in one job, so such a difference reads
    ``unstable``, never ``changed`` or ``unchanged`` by the cache alone."""
    return variable in _PER_JOB_NAMES or variable.startswith(_PER_JOB_PREFIXES)


def _no_tests(spec: str, prefix: str) -> str:
    """The error for a selection that is empty. From a subfolder pytest looks for tests there
    only (``testpaths`` counts from the rootdir alone), and so does the recording, which
    starts where the user stands: a reviewer in the package's folder got "check the pytest
    arguments" and no hint that the folder was the cause."""
    if not prefix:
        return f"pytest collected no tests in {spec}; check the pytest arguments after --"
    return (
        f"pytest collected no tests in {spec}, started in {prefix}/ as from here (pytest looks"
        " for tests in the folder it starts in); run diffgenome from the folder you run"
        " pytest from, or name the tests after --"
    )


def _same_draws(pytest_args: Sequence[str]) -> list[str]:
    """``--genome-random-seed=0`` unless the user chose a seed: ``random`` then draws the same
    numbers in every recording of a diff (google-auth: 47 tests differed on an identical tree
    by retry jitter alone; cachetools' RRCache evicts a random key)."""
    if any(arg.startswith("--genome-random-seed") for arg in pytest_args):
        return []
    return ["--genome-random-seed=0"]


def _same_examples(target: Target, pytest_args: Sequence[str]) -> list[str]:
    """``--hypothesis-seed=0`` where hypothesis' plugin is there and the user chose nothing:
    every recording of a diff then draws the same examples, so that base and head differ only
    where the code does (attrs: 22 tests differed on an identical tree by the draw alone).
    The user's own ``--hypothesis-seed`` (or switching the plugin off) wins."""
    if not target.has_hypothesis:
        return []
    for arg in pytest_args:
        if arg.startswith("--hypothesis-seed") or arg.endswith("no:hypothesispytest"):
            return []
    return ["--hypothesis-seed=0"]


__all__ = ["FIXED_PYTEST_ARGS", "Recordings"]
