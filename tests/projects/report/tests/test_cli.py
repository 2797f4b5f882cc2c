import os

import pytest

from report import cli


def test_summary():
    assert cli.summary([1, 2]) == 3


def test_publish(tmp_path):
    assert cli.publish([1, 2], str(tmp_path)) == 2
    assert (tmp_path / "report.txt").exists()


def test_check():
    assert cli.check([1, 2, 3])


def test_legacy():
    with pytest.warns(DeprecationWarning):
        assert cli.legacy((1,)) == [1]


def test_configure(monkeypatch):
    monkeypatch.setenv("REPORT_MODE", "unset")  # put back when the test ends
    assert cli.configure()


def test_quiet():
    assert os.sep
