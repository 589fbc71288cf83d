"""A table ``python -m shancoll.tune`` writes under this MPI library is text
(Open MPI counts a NUL in its version string's length, which went into the
match line) and the default search takes it here: its match lines hold."""

from __future__ import annotations

import shancoll
from shancoll import _core
from shancoll._rules import PACKAGE_RULES, user_rules_dir
from shancoll.bench.tune import install, machine, matched_table


def test_a_table_tune_writes_here_is_text_and_holds_here(tmp_path, monkeypatch):
    monkeypatch.delenv("SHANCOLL_RULES", raising=False)
    shancoll.reload_environment()
    fingerprint = machine()
    path = install(matched_table([], fingerprint, "a test"), fingerprint, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert all(line.isprintable() for line in text.replace("\t", " ").splitlines()), repr(text)
    assert f"\nmatch\tmpi\t{fingerprint['mpi']}\n" in text
    try:
        _core.set_default_rules(str(tmp_path))
        info = shancoll.rules_info()
        assert info["path"] == str(path), info
        assert "measured on this machine" in info["how"], info
    finally:
        _core.set_default_rules(f"{user_rules_dir()}:{PACKAGE_RULES}")
        monkeypatch.undo()
        shancoll.reload_environment()
