"""Each way of patching a method, and each way of calling it (tests/e2e/test_seams.py)."""

from unittest import mock

from app import store as st
from app.store import Cache, Store

# -- a mock patched on the class -----------------------------------------------------------


def test_class_patch_instance_call():
    with mock.patch.object(Store, "put", return_value="m"):
        assert st.put_via_instance(Store(), "k", "v") == "m"


def test_class_patch_instance_call_rejected():
    with mock.patch.object(Store, "put", return_value="m"):
        assert st.put_three(Store()) == "m"


def test_class_patch_class_call():
    with mock.patch.object(Store, "put", return_value="m"):
        assert st.put_via_class(Store(), "k", "v") == "m"


def test_class_patch_class_call_rejected():
    with mock.patch.object(Store, "put", return_value="m"):
        assert Store.put(Store(), "k", "v", "extra") == "m"


def test_string_patch_instance_call():
    with mock.patch("app.store.Store.put", return_value="m"):
        assert st.put_via_instance(Store(), "k", "v") == "m"


def test_string_patch_instance_call_rejected():
    with mock.patch("app.store.Store.put", return_value="m"):
        assert st.put_three(Store()) == "m"


def test_mocker_patch_object(mocker):
    mocker.patch.object(Store, "put", return_value="m")
    assert st.put_via_instance(Store(), "k", "v") == "m"


def test_subclass_patch_inherited_method():
    with mock.patch.object(Cache, "put", return_value="m"):
        assert st.put_via_instance(Cache(), "k", "v") == "m"


def test_autospec_instance_and_class_call():
    with mock.patch.object(Store, "put", autospec=True, return_value="m"):
        assert st.put_via_instance(Store(), "k", "v") == "m"
        assert st.put_via_class(Store(), "k", "v") == "m"


def test_keyword_only_argument():
    with mock.patch.object(Store, "save", return_value="m"):
        assert st.save(Store()) == "m"


def test_ambiguous_first_argument_of_the_class():
    with mock.patch.object(Store, "merge", return_value="m"):
        assert st.merge_two(Store(), Store()) == "m"


def test_staticmethod_patch():
    with mock.patch.object(Store, "norm", return_value="n"):
        assert st.norm_via_instance(Store(), "K") == "n"
        assert st.norm_via_class("K") == "n"


def test_classmethod_patch():
    with mock.patch.object(Store, "build", return_value="b"):
        assert st.build_via_class("x") == "b"
        assert st.build_via_instance(Store(), "x") == "b"


# -- a mock patched on an instance ---------------------------------------------------------


def test_instance_patch():
    s = Store()
    with mock.patch.object(s, "put", return_value="m"):
        assert st.put_via_instance(s, "k", "v") == "m"


def test_instance_patch_rejected():
    s = Store()
    with mock.patch.object(s, "put", return_value="m"):
        assert st.put_three(s) == "m"


def test_instance_autospec():
    s = Store()
    with mock.patch.object(s, "put", autospec=True, return_value="m"):
        assert st.put_via_instance(s, "k", "v") == "m"


# -- stubs and fakes -----------------------------------------------------------------------


def test_monkeypatch_lambda_fits(monkeypatch):
    monkeypatch.setattr(Store, "put", lambda self, key, value: "s")
    assert st.put_via_instance(Store(), "k", "v") == "s"


def test_monkeypatch_lambda_drifted(monkeypatch):
    monkeypatch.setattr(Store, "put", lambda self, key: "s")
    assert st.put_one(Store()) == "s"


def test_monkeypatch_default_drifted(monkeypatch):
    monkeypatch.setattr(st, "fetch", lambda url, timeout=10: "s")
    assert st.use_fetch("u") == "s"


def test_monkeypatch_catch_all_called_wrongly(monkeypatch):
    monkeypatch.setattr(st, "fetch", lambda *args, **kwargs: "s")
    assert st.use_fetch_extra("u") == "s"


def test_monkeypatch_on_instance(monkeypatch):
    s = Store()
    monkeypatch.setattr(s, "put", lambda key, value: "s")
    assert st.put_via_instance(s, "k", "v") == "s"


def test_monkeypatch_staticmethod_with_function(monkeypatch):
    monkeypatch.setattr(Store, "norm", lambda key: "n")
    assert st.norm_via_class("K") == "n"


def test_monkeypatch_inherited_method(monkeypatch):
    monkeypatch.setattr(Cache, "put", lambda self, key: "s")
    assert st.put_one(Cache()) == "s"


class FittingStore(Store):
    def put(self, key, value):
        return "fake"


class DriftedStore(Store):
    def put(self, key):
        return "fake"


def test_override_fits():
    assert st.put_via_instance(FittingStore(), "k", "v") == "fake"


def test_override_drifted():
    assert st.put_one(DriftedStore()) == "fake"


def test_instance_attribute_function_fits():
    s = Store()
    s.put = lambda key, value: "i"
    assert st.put_via_instance(s, "k", "v") == "i"


def test_instance_attribute_function_drifted():
    s = Store()
    s.put = lambda key: "i"
    assert st.put_one(s) == "i"


class TestBoundFake:
    def fake_put(self, key, value):
        return "bound"

    def test_bound_method_fits(self, monkeypatch):
        monkeypatch.setattr(Store, "put", self.fake_put)
        assert st.put_via_instance(Store(), "k", "v") == "bound"


class ForwardingStore(Store):
    def put(self, *args, **kwargs):
        return "forwarded"


def test_override_catch_all_fits():
    assert st.put_via_instance(ForwardingStore(), "k", "v") == "forwarded"


def test_override_catch_all_called_wrongly():
    assert st.put_three(ForwardingStore()) == "forwarded"
