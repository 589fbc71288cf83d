"""The pure allreduce schedules (src/cpp/shancoll/pattern/*.h), checked by the
C++ program tests/cpp/pattern_tests.cc: a symbolic executor that runs every
schedule for all ranks (P = 1..130, n = 1..8) and checks that each rank ends
with every contribution exactly once, plus the papers' round counts.

The binary is taken, in this order, from $SHANCOLL_PATTERN_TESTS, from the
installed package (<site-packages>/shancoll/bin/shancoll_pattern_tests), or
from a CMake build directory under build/. When none is found, or the one found
is older than the sources, it is compiled here with the system C++ compiler
into a temporary directory, so the test always runs the current headers. It
is skipped only if there is neither a binary nor a C++ compiler.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "cpp" / "pattern_tests.cc"
HEADERS = REPO / "src" / "cpp" / "shancoll" / "pattern"
NAME = "shancoll_pattern_tests"
SUMMARY = re.compile(r"^pattern_tests: (\d+) passed, (\d+) failed$", re.MULTILINE)


def _candidates() -> list[Path]:
    found = []
    if os.environ.get("SHANCOLL_PATTERN_TESTS"):
        found.append(Path(os.environ["SHANCOLL_PATTERN_TESTS"]))
    spec = importlib.util.find_spec("shancoll")  # locates the package without importing it
    for location in (spec.submodule_search_locations or []) if spec else []:
        found.append(Path(location) / "bin" / NAME)
    found.extend(sorted((REPO / "build").glob(f"*/{NAME}")))
    return found


def _sources_mtime() -> float:
    files = [SOURCE, *SOURCE.parent.glob("*.h"), *HEADERS.glob("*.h")] if SOURCE.exists() else []
    return max((f.stat().st_mtime for f in files), default=0.0)


def _built_binary() -> Path | None:
    newest_source = _sources_mtime()
    for path in _candidates():
        if path.is_file() and os.access(path, os.X_OK) and path.stat().st_mtime >= newest_source:
            return path
    return None


@pytest.fixture(scope="module")
def pattern_tests_binary(tmp_path_factory) -> Path:
    binary = _built_binary()
    if binary is not None:
        return binary
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None or not SOURCE.exists():
        pytest.skip(f"no built {NAME} (looked in {_candidates()}) and no C++ compiler to build it")
    out = tmp_path_factory.mktemp("pattern_tests") / NAME
    include = REPO / "src" / "cpp"
    cmd = [compiler, "-std=c++17", "-O1", "-I", str(include), str(SOURCE), "-o", str(out)]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, f"compiling {SOURCE} failed:\n{' '.join(cmd)}\n{built.stderr}"
    return out


def test_pattern_schedules(pattern_tests_binary):
    run = subprocess.run([str(pattern_tests_binary)], capture_output=True, text=True, timeout=300)
    summary = SUMMARY.findall(run.stdout)
    tail = run.stdout[-4000:] + run.stderr
    assert summary, f"no summary line from {pattern_tests_binary}:\n{tail}"
    passed, failed = (int(x) for x in summary[-1])
    failures = "\n".join(line for line in run.stdout.splitlines() if line.startswith("FAIL"))
    assert failed == 0 and run.returncode == 0, f"{failed} pattern checks failed:\n{failures}"
    assert passed > 0
