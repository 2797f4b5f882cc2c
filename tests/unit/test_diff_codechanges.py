"""Which symbols and decision sites a code change touched, named as the recorder names them."""

from __future__ import annotations

import textwrap

from diffgenome.analysis.diff import CodeChangeInput, code_changes_from_sources
from diffgenome.protocol.naming import SourceNames


def changes(base: str | None, head: str | None, module: str = "pkg.mod") -> CodeChangeInput:
    base_files = {} if base is None else {"pkg/mod.py": textwrap.dedent(base)}
    head_files = {} if head is None else {"pkg/mod.py": textwrap.dedent(head)}
    return code_changes_from_sources(base_files, head_files, lambda path: module)


def site_id(source: str, symbol: str, predicate: str) -> str:
    """The id the recorder gives the decision ``predicate`` of ``symbol`` in ``source``."""
    (found,) = [
        s.id
        for s in SourceNames(textwrap.dedent(source), "pkg.mod").sites
        if s.symbol == symbol and s.predicate == predicate
    ]
    return found


def summary(code: CodeChangeInput) -> dict[str, str]:
    return {change.symbol: change.change for change in code.symbols}


BASE = """
    LIMIT = 3


    def price(x):
        if x > LIMIT:
            return x * 2
        return x


    class Cart:
        def add(self, item):
            self.items.append(item)

        def total(self):
            return sum(i for i in self.items if i)


    def helper():
        return 1
"""


def test_moving_code_adding_comments_and_docstrings_is_no_change() -> None:
    head = """
        '''Module docstring.'''
        LIMIT = 3  # the limit


        def helper():
            # moved up
            return 1


        class Cart:
            '''A cart.'''

            def total(self):
                return sum(i for i in self.items if i)

            def add(self, item):
                self.items.append(item)


        def price(x):
            '''Price of x.'''
            if x > LIMIT:  # big
                return x * 2

            return x
    """
    assert changes(BASE, head).symbols == ()


def test_deleted_and_renamed_functions() -> None:
    head = BASE.replace("def helper():", "def helper_renamed():").replace(
        "\n        def add(self, item):\n            self.items.append(item)\n", ""
    )
    code = changes(BASE, head)
    # The renamed function is paired with its old self (the mapping, #46): one entry under
    # head's name, its code the same.
    assert summary(code) == {
        "py:pkg.mod.Cart.add": "removed",
        "py:pkg.mod.helper_renamed": "modified",
    }
    renamed = code.by_symbol()["py:pkg.mod.helper_renamed"]
    assert renamed.renamed_from == "py:pkg.mod.helper" and renamed.renames_only
    assert code.mapping.symbols == {"py:pkg.mod.helper": "py:pkg.mod.helper_renamed"}


def test_editing_a_method_changes_the_method_not_its_class() -> None:
    head = BASE.replace("self.items.append(item)", "self.items.insert(0, item)")
    code = changes(BASE, head)
    assert summary(code) == {"py:pkg.mod.Cart.add": "modified"}
    assert code.symbols[0].path == "pkg/mod.py"


def test_a_changed_condition_is_the_same_decision_modified() -> None:
    """Within one version a decision is known by what it tests; across versions the mapping
    pairs the ``if`` whose condition changed with its old self (#46): its counts are
    compared with the old condition's (a mutant that flips an outcome is a change, not a
    removed decision beside an added one, which decide nothing)."""
    head = BASE.replace("if x > LIMIT:", "if x >= LIMIT:")
    code = changes(BASE, head)
    (change,) = code.symbols
    assert change.symbol == "py:pkg.mod.price" and change.change == "modified"
    new = site_id(head, "py:pkg.mod.price", "x >= LIMIT")
    assert [(s.site, s.change, s.predicate) for s in change.sites] == [
        (new, "modified", "x >= LIMIT")
    ]
    assert code.mapping.sites == {site_id(BASE, "py:pkg.mod.price", "x > LIMIT"): new}


def test_changed_code_under_a_decision_marks_that_decision_only() -> None:
    base = """
        def f(x, y):
            if x:
                a = 1
            if y:
                a = 2
            return [v for v in range(3) if v]
    """
    head = base.replace("a = 2", "a = 3")
    (change,) = changes(base, head).symbols
    assert [(s.site, s.change) for s in change.sites] == [
        (site_id(base, "py:pkg.mod.f", "y"), "modified")
    ]


def test_code_edited_in_an_elif_is_that_elif_s_change_not_the_chain_s() -> None:
    base = """
        def f(opt):
            if opt == "a":
                return 1
            elif opt == "b":
                return 2
            elif opt == "c":
                print("c")
                return 3
            else:
                return 0
    """
    head = base.replace('print("c")', 'print("c!")')
    (change,) = changes(base, head).symbols
    assert [(s.predicate, s.change) for s in change.sites] == [("opt == 'c'", "modified")]
    # The last branch's ``else`` is code the last ``elif`` guards: edited, it is that one's.
    head = base.replace("return 0", "return -1")
    (change,) = changes(base, head).symbols
    assert [(s.predicate, s.change) for s in change.sites] == [("opt == 'c'", "modified")]


def test_a_new_decision_is_an_added_site_and_the_others_keep_their_ids() -> None:
    head = BASE.replace(
        "    def price(x):\n        if x > LIMIT:\n",
        "    def price(x):\n"
        "        if x is None:\n"
        "            return 0\n"
        "        if x < 0:\n"
        "            return 0\n"
        "        if x > LIMIT:\n",
    )
    assert head != BASE
    (change,) = changes(BASE, head).symbols
    assert sorted((s.site, s.change, s.predicate) for s in change.sites) == sorted(
        [
            (site_id(head, "py:pkg.mod.price", "x < 0"), "added", "x < 0"),
            (site_id(head, "py:pkg.mod.price", "x is None"), "added", "x is None"),
        ]
    )
    assert site_id(BASE, "py:pkg.mod.price", "x > LIMIT") == site_id(
        head, "py:pkg.mod.price", "x > LIMIT"
    )


def test_a_generator_expression_is_its_own_symbol_named_by_its_content() -> None:
    head = BASE.replace("for i in self.items if i)", "for i in self.items if i > 0)")
    code = changes(BASE, head)
    prefix = "py:pkg.mod.Cart.total.<locals>.<genexpr>["
    # Named by its content within a version; paired with its old self across (#46).
    [(new, change)] = [(c.symbol, c) for c in code.symbols]
    assert new.startswith(prefix) and change.change == "modified"
    old = change.renamed_from
    assert old is not None and old.startswith(prefix) and old != new
    assert site_id(BASE, old, "i") and site_id(head, new, "i > 0")
    assert code.mapping.sites == {site_id(BASE, old, "i"): site_id(head, new, "i > 0")}


def test_module_level_code_is_the_module_symbol() -> None:
    assert summary(changes(BASE, BASE.replace("LIMIT = 3", "LIMIT = 4"))) == {
        "py:pkg.mod": "modified"
    }


def test_a_nested_function_change_is_the_nested_symbol() -> None:
    base = """
        def outer():
            def inner(x):
                return x + 1
            return inner(1)
    """
    head = base.replace("x + 1", "x + 2")
    assert summary(changes(base, head)) == {"py:pkg.mod.outer.<locals>.inner": "modified"}


def test_lambdas_are_named_by_content_not_by_order() -> None:
    base = """
        def f():
            a = lambda: 1
            b = lambda: 2
            return a() + b()
    """
    # a changed lambda is another name, paired with its old self; one inserted above leaves
    # the others' names alone
    head = base.replace("lambda: 2", "lambda: 3")
    assert sorted(summary(changes(base, head)).values()) == ["modified"]
    inserted = base.replace("a = lambda: 1", "z = lambda: 0\n            a = lambda: 1")
    found = summary(changes(base, inserted))
    assert found.pop("py:pkg.mod.f") == "modified"  # f's own code makes one more lambda
    assert list(found.values()) == ["added"]  # a and b are not renamed
    assert next(iter(found)).startswith("py:pkg.mod.f.<locals>.<lambda>[")


def test_added_and_deleted_files() -> None:
    assert summary(changes(None, "def f():\n    return 1\n")) == {
        "py:pkg.mod": "added",
        "py:pkg.mod.f": "added",
    }
    assert summary(changes("def f():\n    return 1\n", None)) == {
        "py:pkg.mod": "removed",
        "py:pkg.mod.f": "removed",
    }


def test_files_that_are_not_modules_or_do_not_parse() -> None:
    skipped = code_changes_from_sources({"README": "a"}, {"README": "b"}, lambda path: None)
    assert skipped.symbols == () and skipped.unparsed == ()
    broken = changes("def f():\n    return 1\n", "def f(:\n")
    assert broken.symbols == () and broken.unparsed == ("pkg/mod.py",)


def test_a_lambda_that_comes_to_read_like_another_does_not_rename_it() -> None:
    """packaging's ``_operators`` table (a module-level mutant): when the ``"in"`` lambda's
    body becomes the ``"not in"`` one's, the ``"not in"`` lambda keeps its name, because a
    lambda is named by what it is *and* where it is bound."""
    base = """
        OPS = {
            "in": lambda lhs, rhs: lhs in rhs,
            "not in": lambda lhs, rhs: lhs not in rhs,
        }
    """
    head = base.replace("lhs in rhs,", "lhs not in rhs,", 1)
    found = summary(changes(base, head))
    assert sorted(found.values()) == ["added", "removed"], found
    base_ids, head_ids = _lambda_ids(base), _lambda_ids(head)
    assert base_ids[1] == head_ids[1]  # the "not in" lambda, named alike on both sides
    assert base_ids[0] != head_ids[0]  # the changed one is another lambda
    assert set(found) == {base_ids[0], head_ids[0]}


def _lambda_ids(source: str) -> list[str]:
    import types

    text = textwrap.dedent(source)
    names = SourceNames(text, "pkg.mod")
    code = compile(text, "pkg/mod.py", "exec")
    lambdas = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return [names.code_name(c).symbol for c in lambdas]


def test_a_module_level_name_imported_elsewhere_has_readers_there() -> None:
    """packaging's DEFAULT_RULES: bound in _tokenizer.py, imported and read by _parser.py.
    A module-level mutant of it failed 2,376 tests that ``affected`` did not select."""
    base = {"pkg/_tokenizer.py": "RULES = {'a': 1}\n\ndef tokenize(x):\n    return x\n"}
    head = {"pkg/_tokenizer.py": "RULES = {'a': 2}\n\ndef tokenize(x):\n    return x\n"}
    others = {
        "pkg/_parser.py": textwrap.dedent(
            """
            from ._tokenizer import RULES as TABLE


            def parse(x):
                return TABLE[x]


            def unrelated(x):
                return x
            """
        ),
        "pkg/other.py": "import pkg._tokenizer\n\ndef peek():\n    return pkg._tokenizer.RULES\n",
        "pkg/quiet.py": "def quiet():\n    return 1\n",
    }

    def module_of(path: str) -> str:
        return path.removesuffix(".py").replace("/", ".")

    asked: list[list[str]] = []

    def importers(names: list[str]) -> dict[str, str]:
        asked.append(list(names))
        return {p: t for p, t in others.items() if any(n in t for n in names)}

    code = code_changes_from_sources(base, head, module_of, importers)
    [change] = code.symbols
    assert (change.symbol, change.bound) == ("py:pkg._tokenizer", ("RULES",))
    assert set(change.readers) == {"py:pkg._parser.parse", "py:pkg.other.peek"}
    assert asked == [["_tokenizer"]]
    # without the other modules, only the file's own readers are known (none here)
    [alone] = code_changes_from_sources(base, head, module_of).symbols
    assert alone.readers == ()


def test_affected_selects_readers_of_a_module_imported_before_recording() -> None:
    """The module whose body changed ran before recording began (a conftest imported it), so
    the recording has no symbol for it; its readers in another module still select the tests
    that ran them (packaging: 2,376 failing tests were not selected)."""
    import genomes

    from diffgenome.analysis.diff.affected import affected_tests

    base = {"src/pkg/_tokenizer.py": "RULES = {'a': 1}\n"}
    head = {"src/pkg/_tokenizer.py": "RULES = {'a': 2}\n"}
    parser = "from ._tokenizer import RULES\n\n\ndef parse(x):\n    return RULES[x]\n"

    def module_of(path: str) -> str | None:
        return path.removeprefix("src/").removesuffix(".py").replace("/", ".")

    code = code_changes_from_sources(
        base, head, module_of, lambda names: {"src/pkg/_parser.py": parser}
    )
    reader = genomes.phase([genomes.call(0, None, "t"), genomes.call(1, 0, "py:pkg._parser.parse")])
    other = genomes.phase([genomes.call(0, None, "u")])
    doc = genomes.document(
        [
            genomes.test_record("tests/test_p.py::test_parse", {"call": reader}),
            genomes.test_record("tests/test_p.py::test_other", {"call": other}),
        ],
        symbols=[{"id": "py:pkg._parser.parse", "origin": "repo", "kind": "function"}],
    )
    found = affected_tests(doc, code, module_of)
    assert [item.test for item in found] == ["tests/test_p.py::test_parse"]
    [reason] = found[0].reasons
    assert (reason.symbol, reason.via, reason.names) == ("py:pkg._tokenizer", "reads", ("RULES",))


def test_a_generator_passed_to_a_renamed_callee_keeps_its_body() -> None:
    """Its name says where it is bound, so renaming the callee renames it; its body digest
    is its code, equal on both sides, so the differ can tell the rename from new code."""
    base = "class V:\n    def f(self, xs):\n        return self._exec(x + 1 for x in xs)\n"
    head = base.replace("_exec", "_execute")
    code = changes(base, head)
    # Paired with its old self by the mapping (#46): one entry, the same code.
    [gen] = [c for c in code.symbols if "<genexpr>" in c.symbol]
    assert gen.change == "modified" and gen.renames_only, code.symbols
    assert gen.renamed_from is not None and gen.renamed_from != gen.symbol
    other = changes(base, base.replace("x + 1", "x + 2"))
    [edited] = [c for c in other.symbols if "<genexpr>" in c.symbol]
    assert edited.change == "modified" and not edited.renames_only


def test_a_caller_changed_only_to_name_renamed_code_anew_is_the_same_code() -> None:
    """``_exec`` renamed ``_execute`` as it was: its caller ``run`` differs only by the name it
    calls, and behaves as before (mock drift takes none of them as evidence)."""
    base = textwrap.dedent(
        """
        class V:
            def _exec(self, x):
                return x + 1

            def run(self, x):
                return self._exec(x) * 2
        """
    )
    renamed = base.replace("_exec", "_execute")
    code = changes(base, renamed)
    by_symbol = code.by_symbol()
    assert by_symbol["py:pkg.mod.V.run"].renames_only
    assert code.same_code() == {"py:pkg.mod.V._exec", "py:pkg.mod.V._execute", "py:pkg.mod.V.run"}
    # The caller also edited: not the same code.
    edited = changes(base, renamed.replace("* 2", "* 3"))
    assert not edited.by_symbol()["py:pkg.mod.V.run"].renames_only
    assert edited.same_code() == {"py:pkg.mod.V._exec", "py:pkg.mod.V._execute"}
    # The helper renamed *and* edited: paired with its old self (one entry, modified), and
    # neither it nor its caller is the same code.
    both = changes(base, renamed.replace("x + 1", "x + 2"))
    assert not both.by_symbol()["py:pkg.mod.V.run"].renames_only
    assert both.by_symbol()["py:pkg.mod.V._execute"].renamed_from == "py:pkg.mod.V._exec"
    assert both.same_code() == frozenset()


LOCALS = """
    UNCOUNTABLES = {"sheep", "fish"}


    def singularize(word):
        for inflection in UNCOUNTABLES:
            if word.endswith(inflection):
                return word
        try:
            head, tail = word[:-1], word[-1]
        except IndexError as err:
            raise ValueError(word) from err
        return head if tail == "s" else word
"""


def test_renaming_a_local_is_no_change_of_the_code() -> None:
    """inflection's ``for inflection in UNCOUNTABLES`` made ``for uncountable in ...``: the
    genomes were the same and the report still said "code edited" of the function."""
    head = (
        LOCALS.replace("inflection", "uncountable")
        .replace("head", "stem")
        .replace("err", "problem")
    )
    assert summary(changes(LOCALS, head)) == {}


def test_two_locals_that_swap_roles_are_a_change() -> None:
    head = LOCALS.replace("return head if tail", "return tail if head")
    assert summary(changes(LOCALS, head)) == {"py:pkg.mod.singularize": "modified"}


def test_renaming_a_parameter_is_a_change() -> None:
    """Callers may pass it by name."""
    head = LOCALS.replace("word", "text")
    assert summary(changes(LOCALS, head)) == {"py:pkg.mod.singularize": "modified"}


def test_a_function_that_reads_its_locals_by_name_keeps_them() -> None:
    base = """
        def render(name):
            greeting = "hello"
            return "{greeting} {name}".format(**locals())
    """
    head = base.replace("greeting", "salutation")
    assert summary(changes(base, head)) == {"py:pkg.mod.render": "modified"}


def test_a_local_a_nested_function_shares_keeps_its_name() -> None:
    """A cell is read by the nested function's own code, which is its own symbol."""
    base = """
        def outer():
            count = 0

            def inner():
                return count

            return inner()
    """
    head = base.replace("count", "total")
    assert "py:pkg.mod.outer" in summary(changes(base, head))


def test_a_module_whose_file_moved_is_compared_with_itself() -> None:
    """inflection 0.5.1: ``inflection.py`` became ``inflection/__init__.py`` with one edit
    (``__version__``). Every symbol read as removed and added, and the edit as nothing."""
    module = {"inflection.py": "inflection", "inflection/__init__.py": "inflection"}
    source = "__version__ = '0.5.0'\n\n\ndef f(x):\n    return x\n"
    moved = code_changes_from_sources(
        {"inflection.py": source},
        {"inflection/__init__.py": source.replace("0.5.0", "0.5.1")},
        module.get,
    )
    assert summary(moved) == {"py:inflection": "modified"}
    assert [change.path for change in moved.symbols] == ["inflection/__init__.py"]
    unchanged = code_changes_from_sources(
        {"inflection.py": source}, {"inflection/__init__.py": source}, module.get
    )
    assert summary(unchanged) == {}


def test_one_program_is_one_syntax_tree_for_every_file_that_differs() -> None:
    from diffgenome.analysis.diff.codechanges import same_program

    code = "def f(n):\n    return n * 2\n"
    commented = "def f(n):  # twice\n\n    return n * 2\n"
    assert same_program({}, {})  # no file differs
    assert same_program({"a.py": code}, {"a.py": commented})
    assert not same_program({"a.py": code}, {"a.py": code.replace("* 2", "+ n")})
    assert not same_program({"a.py": code}, {"a.py": '"""Doc."""\n' + code})  # in the tree
    assert not same_program({"a.py": code}, {"b.py": code})  # moved: another module
    assert not same_program({"data.txt": "x"}, {"data.txt": "x "})  # not Python
    assert not same_program({"a.py": code}, {"a.py": None})  # deleted
    assert not same_program({"a.py": code}, {"a.py": "def f(:\n"})  # unparsed


READERS = """
    import itertools

    LIMIT = 3


    class Handler:
        def end(self, a):
            data = self.data
            self.n += 1
            self.out = [x for x in self.items if x > LIMIT]
            pairs = (y + a for y in self.seq)
            def inner():
                return a + OTHER
            return data, len(self.out), pairs, inner, self.flush()

        def shared(self):
            def inner():
                return self.hidden
            return self.data, inner

        @classmethod
        def make(cls, n):
            return cls.DEFAULT + n + itertools.count().__next__()


    def plain(obj):
        return obj.data, LIMIT
"""


def test_the_state_a_function_reads_is_read_as_the_recorder_reads_it() -> None:
    """A function's one-sided reads decide which state facts say only that the code changed
    (docs/diffing.md, "Touched"): read from the syntax tree, they must name what the
    recorder names from the bytecode (``self.<field>`` on a method's receiver, a cell or not;
    ``global:<name>``), a local ``data`` never being ``self.data``."""
    import ast
    from types import CodeType

    from diffgenome.analysis.diff.codechanges import _state_targets
    from diffgenome.recording.collect.contract import _argument_names, _read_state_reads

    source = textwrap.dedent(READERS)
    tree = ast.parse(source)
    functions = {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name != "inner"
    }
    codes: dict[str, CodeType] = {}
    stack = [compile(tree, "<readers>", "exec")]
    while stack:
        code = stack.pop()
        if code.co_name in functions:
            codes[code.co_name] = code
        stack.extend(c for c in code.co_consts if isinstance(c, CodeType))
    assert set(codes) == set(functions)
    for name, code in codes.items():
        fields, globals_read = _read_state_reads(code, _argument_names(code)[1])
        recorded = {f"self.{f}" for f in fields} | {f"global:{g}" for g in globals_read}
        assert _state_targets(code, functions[name]) == recorded, name
    assert "self.data" in _state_targets(codes["end"], functions["end"])
    # A receiver a closure shares is a cell: its own reads are named, the closure's are not.
    assert _state_targets(codes["shared"], functions["shared"]) == {"self.data"}
