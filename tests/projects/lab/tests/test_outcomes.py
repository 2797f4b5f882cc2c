import pytest

from lab import calls


@pytest.fixture
def broken():
    calls.leaf(1)
    raise RuntimeError("fixture broke")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")


def test_passes():
    calls.leaf(1)


def test_fails():
    calls.leaf(1)
    assert False


def test_skips():
    pytest.skip("not today")


@pytest.mark.skip(reason="marked")
def test_skip_mark():
    pass


@pytest.mark.xfail(reason="known")
def test_xfails():
    assert calls.leaf(1) == 3


@pytest.mark.xfail(reason="known", strict=False)
def test_xpasses():
    assert calls.leaf(1) == 2


def test_errors(broken):
    pass


def test_teardown_errors(broken_teardown):
    pass


def test_subtests(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert calls.leaf(i) != 2
