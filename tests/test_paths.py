"""helpers.paths: the environment a block runs in."""

import os

import pytest

from helpers import paths


def test_environment_sets_and_unsets_for_a_block_and_restores_both(monkeypatch):
    monkeypatch.setenv("HARMS_T_SET", "before")
    monkeypatch.delenv("HARMS_T_NEW", raising=False)
    with pytest.raises(RuntimeError):
        with paths.environment(HARMS_T_SET=None, HARMS_T_NEW="x"):
            assert "HARMS_T_SET" not in os.environ and os.environ["HARMS_T_NEW"] == "x"
            raise RuntimeError
    assert os.environ["HARMS_T_SET"] == "before" and "HARMS_T_NEW" not in os.environ
