"""State facts, line-free names of anonymous code, and errors inside the collector.

Each test runs a real `pytest --genome` session on a small generated project.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from e2e.helpers import (
    export,
    make_project,
    nodes_by_symbol,
    one_node,
    os_events,
    record,
    run_pytest,
    test_genome,
    without_run,
)

STATE_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/account.py": """
        LIMIT = 100
        MODE = None


        class Account:
            def __init__(self):
                self.balance = 0
                self.owner = ""
                self.tags = []

            def deposit(self, amount):
                if amount > LIMIT:
                    raise ValueError("over limit")
                self.balance = self.balance + amount
                self.tags.append("d")
                return self.balance

            def describe(self):
                return f"{self.owner}:{self.balance}:{MODE}"
    """,
    "tests/test_account.py": """
        from pkg.account import Account

        def test_deposit():
            account = Account()
            account.deposit(5)
            account.deposit(7)

        def test_describe():
            account = Account()
            account.owner = "ann"
            account.describe()
    """,
}


def test_state_facts_bucket_receiver_fields_and_globals(tmp_path: Path) -> None:
    doc = record(make_project(tmp_path, STATE_PROJECT))
    deposit = one_node(
        test_genome(doc, "::test_deposit")["phases"]["call"], "py:pkg.account.Account.deposit"
    )
    facts = {(f["when"], f["target"], f["bucket"]) for f in deposit["state"]}
    # Fields read through self, bucketed, on entry and exit; never the value itself.
    assert ("entry", "self.balance", "zero") in facts
    assert ("entry", "self.balance", "pos") in facts  # second deposit
    assert ("exit", "self.balance", "pos") in facts
    assert ("entry", "self.tags", "empty") in facts
    assert ("exit", "self.tags", "one") in facts
    assert ("exit", "self.tags", "many") in facts
    assert ("entry", "global:LIMIT", "pos") in facts
    assert not any("Account" in target or "ValueError" in target for _, target, _ in facts)
    describe = one_node(
        test_genome(doc, "::test_describe")["phases"]["call"], "py:pkg.account.Account.describe"
    )
    described = {(f["when"], f["target"], f["bucket"]) for f in describe["state"]}
    assert ("entry", "self.owner", "nonempty") in described
    assert ("entry", "global:MODE", "none") in described


NAMES_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/shapes.py": """
        import sys


        def pick(values):
            first = sorted(values, key=lambda v: -v)
            second = sorted(values, key=lambda v: v % 3)
            return first[0] + second[0] + sum(x for x in values if x)


        class Box:
            def __init__(self):
                self._size = 1

            @property
            def size(self):
                return self._size

            @size.setter
            def size(self, value):
                self._size = value


        if sys.maxsize > 0:
            def mode():
                return "big"
        else:
            def mode():
                return "small"
    """,
    "tests/test_names.py": """
        from pkg.shapes import Box, mode, pick

        def test_names():
            pick([1, 2, 3])
            box = Box()
            box.size = 3
            assert box.size == 3
            mode()
    """,
}


def _symbols(doc: dict[str, Any]) -> set[str]:
    phase = test_genome(doc, "::test_names")["phases"]["call"]
    return {n["symbol"] for n in phase["nodes"] if n["type"] == "call"}


def test_anonymous_code_by_content_and_twins_by_line_free_ordinals(tmp_path: Path) -> None:
    symbols = _symbols(record(make_project(tmp_path, NAMES_PROJECT)))
    assert {
        "py:pkg.shapes.Box.size",  # the getter
        "py:pkg.shapes.Box.size#1",  # the setter
        "py:pkg.shapes.mode",  # the first of two conditional definitions, the one that ran
    } <= symbols
    anonymous = sorted(
        re.sub(r"\[[0-9a-f]{10}\]", "[digest]", s) for s in symbols if ".<locals>.<" in s
    )
    # two different lambdas and a generator expression, each named by what it is
    assert anonymous == [
        "py:pkg.shapes.pick.<locals>.<genexpr>[digest]",
        "py:pkg.shapes.pick.<locals>.<lambda>[digest]",
        "py:pkg.shapes.pick.<locals>.<lambda>[digest]",
    ]
    without_digests = [re.sub(r"\[[0-9a-f]{10}\]", "", s) for s in symbols]
    assert not any(any(ch.isdigit() for ch in s.split("#")[0]) for s in without_digests)


def test_names_survive_moved_code_and_comments(tmp_path: Path) -> None:
    first = _symbols(record(make_project(tmp_path, NAMES_PROJECT, name="a")))
    moved = dict(NAMES_PROJECT)
    source = textwrap.dedent(NAMES_PROJECT["pkg/shapes.py"])
    moved["pkg/shapes.py"] = "# a comment\n\n\n" + source.replace(
        "def pick", "\n\n# moved further down\ndef pick"
    )
    second = _symbols(record(make_project(tmp_path, moved, name="b")))
    assert first == second


def test_errors_inside_the_collector_are_disclosed_not_raised(tmp_path: Path) -> None:
    """A fault inside a callback (injected by patching the recorder's own summariser from a
    conftest) never reaches the test: it passes, and its genome says it is unverified."""
    files = {
        "pkg/__init__.py": "def echo(value):\n    return value\n",
        "tests/conftest.py": """
            from diffgenome.recording.collect import values

            original = values.summarize

            class Poison:
                pass

            def summarize(value):
                if type(value) is Poison:
                    raise RuntimeError("injected collector fault")
                return original(value)

            values.summarize = summarize
        """,
        "tests/test_fault.py": """
            from pkg import echo
            from conftest import Poison

            def test_poisoned():
                assert isinstance(echo(Poison()), Poison)

            def test_clean():
                assert echo(3) == 3
        """,
    }
    doc = record(make_project(tmp_path, files))
    poisoned = test_genome(doc, "::test_poisoned")
    assert poisoned["outcome"] == "passed"
    assert not poisoned["verified"]
    assert any(r.startswith("call:tracer-error:") for r in poisoned["unverified_reasons"])
    clean = test_genome(doc, "::test_clean")
    assert clean["verified"], clean["unverified_reasons"]


def test_ini_switch_records_and_unattributable_threads_are_disclosed(tmp_path: Path) -> None:
    """`genome = true` in the ini records without --genome; a thread started without
    Thread.start cannot be tied to a starter and says so; a plain test function called by repo
    code is a stub that claims nothing."""
    files = {
        "pyproject.toml": """
            [tool.pytest.ini_options]
            genome = true
        """,
        "pkg/__init__.py": """
            import _thread
            import threading


            def work(done):
                done.set()


            def start_raw():
                done = threading.Event()
                _thread.start_new_thread(work, (done,))
                done.wait(10)


            def apply(callback, value):
                return callback(value)
        """,
        "tests/test_raw.py": """
            from pkg import apply, start_raw

            def test_raw_thread():
                start_raw()

            def test_callback_is_a_stub():
                def double(x):
                    return 2 * x
                assert apply(double, 2) == 4
        """,
    }
    project = make_project(tmp_path, files)
    done = run_pytest(project, "-q")  # no --genome: the ini switches recording on
    assert done.returncode == 0, done.stdout + done.stderr
    doc = export(project)
    raw = test_genome(doc, "::test_raw_thread")
    assert "call:unattributed:thread" in raw["unverified_reasons"]
    stub = test_genome(doc, "::test_callback_is_a_stub")
    assert stub["verified"], stub["unverified_reasons"]
    nodes = stub["phases"]["call"]["nodes"]
    stand_in = next(n for n in nodes if n["type"] == "substitution")
    assert (stand_in["mechanism"], stand_in["claimed_target"], stand_in["relation"]) == (
        "stub",
        None,
        "none",
    )
    assert stand_in["substitute"].endswith("test_callback_is_a_stub.<locals>.double")
    parent = next(n for n in nodes if n["id"] == stand_in["parent"])
    assert parent["symbol"] == "py:pkg.apply"


def test_unittest_subtests_fold_into_their_test(tmp_path: Path) -> None:
    """unittest's ``subTest`` is reported like pytest's subtests but not bracketed by the
    recorder: its calls stay in the test's own genome, and no empty records are made."""
    files = {
        "pkg/__init__.py": "def square(x):\n    return x * x\n",
        "tests/test_unit.py": """
            import unittest

            from pkg import square

            class SquareTests(unittest.TestCase):
                def test_many(self):
                    for i in range(50):
                        with self.subTest(i=i):
                            self.assertEqual(square(i), i * i)
        """,
    }
    doc = record(make_project(tmp_path, files))
    ids = [t["id"] for t in doc["tests"] if t["id"] != "<import>"]
    assert ids == ["tests/test_unit.py::SquareTests::test_many"]
    test = test_genome(doc, "::test_many")
    assert test["verified"], test["unverified_reasons"]
    assert one_node(test["phases"]["call"], "py:pkg.square")["count"] == 50


def test_stand_in_calls_do_not_outlive_their_call(tmp_path: Path) -> None:
    """An AsyncMock's coroutine that nobody awaits warns the moment it is dropped, as without
    the recorder (seen on google-api-core: a frame cycle in the mock hook delayed it to the
    next garbage collection, outside the test's ``pytest.warns`` block)."""
    files = {
        "pkg/__init__.py": "def fire(callback):\n    callback()\n    callback()\n",
        "tests/test_warn.py": """
            import gc
            from unittest import mock

            import pytest

            from pkg import fire

            def test_never_awaited_warns_in_the_block():
                gc.disable()
                try:
                    with pytest.warns(RuntimeWarning, match="never awaited") as caught:
                        fire(mock.AsyncMock())
                    assert len(caught) == 2
                finally:
                    gc.enable()
        """,
    }
    project = make_project(tmp_path, files)
    plain = run_pytest(project, "-q")
    assert plain.returncode == 0, plain.stdout
    doc = record(project)
    test = test_genome(doc, "::test_never_awaited_warns_in_the_block")
    assert test["outcome"] == "passed"
    stand_in = next(n for n in test["phases"]["call"]["nodes"] if n["type"] == "substitution")
    assert stand_in["count"] == 2


def test_classes_made_by_a_test_are_not_kept_alive_by_the_recorder(tmp_path: Path) -> None:
    """Classes a test makes (attrs, dataclasses, mocks with spec do it all the time) die when
    the test drops them, as without the recorder: its per-class tables last one phase (they
    once kept thousands of attrs test classes alive for the whole session)."""
    files = {
        "pkg/__init__.py": """
            def describe(obj):
                return type(obj).__name__

            def boom(cls):
                raise cls("x")
        """,
        "tests/test_life.py": """
            import gc
            import weakref

            import pytest

            from pkg import boom, describe

            REFS = []

            def test_make_and_use_classes():
                for i in range(3):
                    made = type(f"Made{i}", (), {"__module__": "pkg"})
                    failure = type(f"Failure{i}", (Exception,), {})
                    describe(made())
                    describe(made)
                    with pytest.raises(failure):
                        boom(failure)
                    REFS.append(weakref.ref(made))
                    REFS.append(weakref.ref(failure))

            def test_they_are_gone():
                gc.collect()
                assert len(REFS) == 6
                assert [ref() for ref in REFS] == [None] * 6
        """,
    }
    project = make_project(tmp_path, files)
    plain = run_pytest(project, "-q")
    assert plain.returncode == 0, plain.stdout
    doc = record(project)
    assert test_genome(doc, "::test_they_are_gone")["outcome"] == "passed"
    assert test_genome(doc, "::test_make_and_use_classes")["outcome"] == "passed"


@pytest.mark.parametrize("core", ["c", "python"])
def test_an_argument_dies_with_its_last_reference_as_without_the_recorder(
    tmp_path: Path, core: str
) -> None:
    """A generator drops its argument and waits: the argument dies when the test drops it too.
    On 3.12 reading the arguments through ``f_locals`` left a snapshot of them in the frame,
    alive until the generator ended (capabilities.frame_get_var); both cores read the frame's
    slots now, wherever the compiled core is built."""
    files = {
        "pkg/__init__.py": """
            def held(x):
                x = None
                yield 1
                yield 2
        """,
        "tests/test_dies.py": """
            import gc
            import weakref

            from pkg import held


            class Thing:
                pass


            def test_the_argument_dies_while_the_generator_waits():
                thing = Thing()
                ref = weakref.ref(thing)
                waiting = held(thing)
                assert next(waiting) == 1
                del thing
                gc.collect()
                assert ref() is None
                assert next(waiting) == 2
        """,
    }
    project = make_project(tmp_path, files)
    plain = run_pytest(project, "-q")
    assert plain.returncode == 0, plain.stdout
    env = {"DIFFGENOME_CORE": "python"} if core == "python" else None
    doc = record(project, env=env)
    test = test_genome(doc, "::test_the_argument_dies_while_the_generator_waits")
    assert test["outcome"] == "passed", test
    assert one_node(test["phases"]["call"], "py:pkg.held")["count"] == 2  # started, resumed


def test_hash_results_do_not_make_two_recordings_differ(tmp_path: Path) -> None:
    """``__hash__`` results are salted per process: recorded by shape only, so two sessions
    with different hash seeds give the same genomes (the stability experiment found them)."""
    files = {
        "pkg/__init__.py": """
            class Tag:
                def __init__(self, name):
                    self.name = name

                def __hash__(self):
                    return hash(self.name)

                def __eq__(self, other):
                    return self.name == other.name


            def unique(names):
                return len({Tag(n) for n in names})
        """,
        "tests/test_tags.py": """
            from pkg import unique

            def test_unique():
                assert unique(["a", "b", "a"]) == 2
        """,
    }
    project = make_project(tmp_path, files)
    first = record(project, env={"PYTHONHASHSEED": "1"})
    second = record(project, env={"PYTHONHASHSEED": "2"})
    assert without_run(first) == without_run(second)
    hashed = one_node(test_genome(first, "::test_unique")["phases"]["call"], "py:pkg.Tag.__hash__")
    assert hashed["results"] == [{"shape": "int", "digest": None}]


def test_random_names_and_addresses_do_not_make_two_recordings_differ(tmp_path: Path) -> None:
    """tempfile names, default reprs' addresses and mock ids change in every run; inside
    digested values they are made stable (the stability experiment found them on
    cookiecutter, google-api-core and google-auth)."""
    files = {
        "pkg/__init__.py": """
            def echo(text):
                return text

            def describe(obj):
                return echo(repr(obj))
        """,
        "tests/test_noise.py": """
            import os
            import tempfile
            from unittest import mock

            from pkg import describe, echo

            def test_noise():
                folder = tempfile.mkdtemp()
                fd, script = tempfile.mkstemp(suffix=".sh")
                os.close(fd)
                echo(folder + "/repo")
                echo("hooks " + script)
                describe(object())
                describe(mock.Mock(name="m.url"))
                describe(test_noise)
        """,
    }
    project = make_project(tmp_path, files)
    first = record(project)
    second = record(project)
    assert without_run(first) == without_run(second)
    echoes = nodes_by_symbol(test_genome(first, "::test_noise")["phases"]["call"])["py:pkg.echo"]
    digests = [arg["digest"] for node in echoes for arg in node["args"]]
    assert len(digests) == 5 and None not in digests  # five different texts, all digested
    assert len(set(digests)) == 5


def test_a_temporary_script_is_named_the_same_in_every_run(tmp_path: Path) -> None:
    """cookiecutter runs hooks from ``mkstemp`` scripts: the program's random name must not
    make the disclosure (and the os_event) differ between two runs of one commit."""
    files = {
        "pkg/__init__.py": """
            import subprocess

            def run_hook(path):
                return subprocess.run([path], check=True).returncode
        """,
        "tests/test_hook.py": """
            import os
            import tempfile

            from pkg import run_hook

            def test_hook():
                fd, script = tempfile.mkstemp(suffix=".sh")
                os.write(fd, b"#!/bin/sh\\nexit 0\\n")
                os.close(fd)
                os.chmod(script, 0o755)
                assert run_hook(script) == 0
        """,
    }
    project = make_project(tmp_path, files)
    first = record(project)
    second = record(project)
    assert without_run(first) == without_run(second)
    test = test_genome(first, "::test_hook")
    # A shell script is another program: its identity is evidence, not a gap (#11.2).
    assert test["verified"] is True, test["unverified_reasons"]
    [spawn] = os_events(test["phases"]["call"], "subprocess")
    assert (spawn["target"], spawn["outcome"]) == ("tmp<random>.sh", "program")


def test_unfollowable_mock_paths_claim_nothing(tmp_path: Path) -> None:
    """Below a patched function, a return value's attribute cannot be followed to real code:
    it claims nothing and so names no relation either."""
    files = {
        "pkg/__init__.py": """
            def fetch(url):
                return "real:" + url


            def shout(url):
                return fetch(url).upper()
        """,
        "tests/test_shout.py": """
            from unittest import mock

            from pkg import shout

            def test_shout():
                with mock.patch("pkg.fetch") as fetch:
                    shout("x")
                fetch.assert_called_once_with("x")
        """,
    }
    doc = record(make_project(tmp_path, files))
    nodes = test_genome(doc, "::test_shout")["phases"]["call"]["nodes"]
    claims = {
        (n["path"], n["claimed_target"], n["relation"])
        for n in nodes
        if n["type"] == "substitution"
    }
    assert claims == {("", "py:pkg.fetch", "patch-target"), ("().upper", None, "none")}


def test_pytest_temp_folders_do_not_make_recordings_differ(tmp_path: Path) -> None:
    """``tmp_path`` lives in a folder numbered per session (and per xdist worker): strings
    holding it are digested with that part made stable, so two sessions, and a serial run and
    ``-n 2``, record the same genomes (the stability experiment's largest cause)."""
    files = {
        "pkg/__init__.py": """
            def save(path, text):
                with open(path, "w") as handle:
                    handle.write(text)
                return path
        """,
        "tests/test_files.py": """
            from pkg import save

            def test_save(tmp_path):
                target = str(tmp_path / "out.txt")
                assert save(target, "hi") == target

            def test_other(tmp_path):
                save(str(tmp_path / "b.txt"), "x")
        """,
    }
    project = make_project(tmp_path, files)
    first = record(project)
    second = record(project)
    assert without_run(first) == without_run(second)
    parallel = record(project, "-n", "2")
    assert without_run(parallel) == without_run(first)
    node = one_node(test_genome(first, "::test_save")["phases"]["call"], "py:pkg.save")
    assert node["args"][0]["digest"] is not None


CLASS_ATTRIBUTE_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/clean.py": """
        class Cleaner:
            HARMFUL_PROTOCOLS = ("javascript:",)

            def __init__(self):
                self.ready = False

            def allowed(self, url):
                if self.ready:
                    return self.lazy
                return not url.startswith(self.HARMFUL_PROTOCOLS)
    """,
    "tests/test_clean.py": """
        from pkg.clean import Cleaner

        def test_allowed():
            assert Cleaner().allowed("https://x")
    """,
}


def test_a_class_attribute_read_through_self_is_no_absent_field(tmp_path: Path) -> None:
    """#24.8: ``self.HARMFUL_PROTOCOLS=absent`` was recorded for a class attribute (bleach's
    ``Cleaner``): it is absent from the instance, present on its class. Both cores say so."""
    project = make_project(tmp_path, CLASS_ATTRIBUTE_PROJECT)
    for core, env in (("python", {"DIFFGENOME_CORE": "python"}), ("compiled if built", None)):
        doc = record(project, env=env)
        allowed = one_node(
            test_genome(doc, "::test_allowed")["phases"]["call"], "py:pkg.clean.Cleaner.allowed"
        )
        facts = {(f["when"], f["target"], f["bucket"]) for f in allowed["state"]}
        assert ("entry", "self.HARMFUL_PROTOCOLS", "class attribute") in facts, (core, facts)
        assert ("entry", "self.lazy", "absent") in facts, (core, facts)
        assert ("entry", "self.ready", "bool:false") in facts, (core, facts)


def test_deepcopys_memo_is_no_argument_and_two_runs_agree(tmp_path: Path) -> None:
    """``copy.deepcopy`` hands ``__deepcopy__`` its memo, keyed by ``id()`` of what it copied:
    recorded as an argument, its digest differed in every process, and every test that
    deep-copied a project object was unstable (marshmallow's fields: 442 of 1,233 tests).
    Values revision 4 leaves it out; the object's own arguments stay."""
    project = make_project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/box.py": """
                import copy


                class Box:
                    def __init__(self, items):
                        self.items = items

                    def __deepcopy__(self, memo):
                        return Box(copy.deepcopy(self.items, memo))
            """,
            "tests/test_box.py": """
                import copy

                from pkg.box import Box


                def test_copy():
                    assert copy.deepcopy(Box([1, [2]])).items == [1, [2]]
            """,
        },
    )
    first = record(project)
    node = one_node(
        test_genome(first, "test_copy")["phases"]["call"], "py:pkg.box.Box.__deepcopy__"
    )
    assert node["args"] == [], node
    assert node["results"][0]["shape"] == "pkg.box.Box", node
    assert first["run"]["config"]["values"] >= 4
    second = record(project)
    assert test_genome(second, "test_copy") == test_genome(first, "test_copy")


def test_parameter_digests_tell_equal_values_of_other_types_apart(tmp_path: Path) -> None:
    """The digests of a parametrized test's values (what pairs renumbered cases) are
    remembered per value within a session: ``True`` and ``1`` are equal in Python and must
    still get their own digests, and each equals what a session of that case alone gives."""
    project = make_project(
        tmp_path,
        {
            "tests/test_p.py": """
                import pytest


                @pytest.mark.parametrize(
                    "v", [1, True, "1", b"1", None, 1], ids=["i", "t", "s", "b", "n", "i2"]
                )
                def test_v(v):
                    assert v is None or v
            """
        },
    )
    whole = {t["id"]: t.get("params") for t in record(project)["tests"] if "[" in t["id"]}
    digests = {test_id.rpartition("[")[2][:-1]: params["v"] for test_id, params in whole.items()}
    assert digests["i"] == digests["i2"]
    assert len({digests[k] for k in ("i", "t", "s", "b", "n")}) == 5, digests
    for case in ("t", "b"):
        alone = record(project, f"tests/test_p.py::test_v[{case}]")
        [test] = [t for t in alone["tests"] if "[" in t["id"]]
        assert test["params"]["v"] == digests[case]
