"""Every front end goes through the core's one door per collective: the same
options refused in the same words, the same algorithm listings.

tests/front_ends/option_cases.py runs one table of bad options through the
Python API and the C API (ctypes on the installed libshancoll.so) at 2
ranks; the PMPI library, whose callers have no options argument, takes the
same keys from SHANCOLL_<COLL>_OPTIONS, which the Python API reads too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpi4py import MPI

HERE = Path(__file__).resolve().parent
CASES_SCRIPT = HERE / "front_ends" / "option_cases.py"
TIMEOUT = 120

sys.path.insert(0, str(HERE / "front_ends"))
from option_cases import CASES, case_id  # noqa: E402


def _mpiexec(ranks: int, *command: str, **env_vars: str) -> str:
    env = dict(os.environ, SHANCOLL_TIMEOUT="30", **env_vars)
    env.pop("LD_PRELOAD", None)
    env.update({k: v for k, v in env_vars.items()})
    run = subprocess.run(
        [str(Path(sys.executable).parent / "mpiexec"), "-n", str(ranks), *command],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    return output


def _why(message: str, key: str) -> str:
    """What a refusal says about `key`, without the front end's prefix
    ("options: ", "SHANCOLL_BCAST_OPTIONS: ") and Python's rank suffix."""
    found = re.search(rf"(?:^|: ){re.escape(key)}: (.*?)(?: \(on rank \d+\))?$", message)
    assert found, f"{key!r} not named in {message!r}"
    return found.group(1)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("front_ends")
    _mpiexec(2, sys.executable, str(CASES_SCRIPT), str(out))
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_option_refused_alike_in_python_and_c_api(results, case):
    """Refused on every rank, before any communication, in the same words."""
    _collective, key, _value, _text = case
    for rank in results:
        python = rank["python"][case_id(case)]
        code, capi = rank["capi"][case_id(case)]
        assert python is not None, f"Python accepted {case_id(case)} on rank {rank['rank']}"
        assert code == MPI.ERR_ARG, (code, capi)
        assert _why(python, key) == _why(capi, key), (python, capi)


def test_algorithm_listings_identical(results):
    for rank in results:
        for collective, listing in rank["listings"].items():
            assert listing["python"] == listing["capi"], collective
            assert "mpi" in listing["python"], collective


PMPI_SCRIPT = """
import sys
import mpi4py

mpi4py.profile("shancoll_pmpi", path=[sys.argv[1]])
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402
import shancoll  # noqa: E402

comm = MPI.COMM_WORLD
x = np.ones(4)
expected = np.full(4, float(comm.size))
out = np.empty(4)
barrier = sys.argv[3] == "barrier"
try:
    shancoll.barrier(comm) if barrier else shancoll.allreduce(comm, x, out)
except shancoll.ArgumentError as e:
    with open(f"{sys.argv[2]}/rank{comm.rank}.txt", "w") as f:
        f.write(str(e))
# Through the PMPI library: refused, left to the MPI library.
comm.Barrier() if barrier else comm.Allreduce(x, out)
assert barrier or np.array_equal(out, expected)
print("PMPI ok", flush=True)
"""


@pytest.mark.parametrize(
    "collective,key,text",
    [
        ("allreduce", "inter_algorithm", "bogus"),
        ("allreduce", "ports", "-1"),
        ("allreduce", "reduce_k", "2"),
        ("allreduce", "tree", "oak"),
        ("barrier", "tree", "flat"),
        ("barrier", "timeout", "-1"),
    ],
)
def test_environment_options_refused_alike_by_python_and_pmpi(tmp_path, collective, key, text):
    """SHANCOLL_<COLL>_OPTIONS goes through the same table in the Python
    API and in the PMPI library, which then leaves the call to MPI (correct
    result) and says why."""
    script = tmp_path / "pmpi_options.py"
    script.write_text(PMPI_SCRIPT)
    libdir = Path(__import__("shancoll").__file__).parent / "lib"
    variable = f"SHANCOLL_{collective.upper()}_OPTIONS"
    output = _mpiexec(
        2, sys.executable, str(script), str(libdir), str(tmp_path), collective,
        **{variable: f"{key}={text}"}, SHANCOLL_PMPI_VERBOSE="1",
    )  # fmt: skip
    assert output.count("PMPI ok") == 2, output[-3000:]
    pmpi = [line for line in output.splitlines() if "fallback: " in line and f"{key}: " in line]
    assert len(pmpi) == 2, output[-3000:]
    for rank in range(2):
        python = (tmp_path / f"rank{rank}.txt").read_text()
        assert _why(python, key) == _why(pmpi[rank].split("fallback: ", 1)[1], key), (python, pmpi)


def test_stats_fields_are_the_cores():
    """shancoll.Stats lists exactly the counters the core reports (Stats::visit)."""
    import dataclasses

    import shancoll
    from shancoll import _core

    reported = list(_core.last_stats(MPI.COMM_SELF))
    assert [f.name for f in dataclasses.fields(shancoll.Stats)] == reported


def test_the_stub_lists_every_bound_function():
    """src/shancoll/_core.pyi names every function the extension binds."""
    import ast
    import inspect

    from shancoll import _core

    stub = Path(_core.__file__).with_name("_core.pyi")
    if not stub.is_file():
        stub = HERE.parent / "src" / "shancoll" / "_core.pyi"
    tree = ast.parse(stub.read_text())
    stubbed = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound = {
        name
        for name, value in vars(_core).items()
        if not name.startswith("__") and (inspect.isbuiltin(value) or inspect.isclass(value))
    }
    assert bound - stubbed == set()


def test_every_public_function_has_its_signature_and_help():
    """The collectives are compiled entries, yet inspect.signature() and help()
    show the documenting Python function's signature and docstring."""
    import inspect
    import pydoc

    import shancoll

    for name in shancoll.__all__:
        value = getattr(shancoll, name)
        if inspect.isclass(value) or not callable(value):
            continue
        signature = inspect.signature(value)  # raises for a bare builtin
        assert "comm" in signature.parameters or name in NOT_ON_A_COMMUNICATOR, name
        assert inspect.isroutine(value), name
        text = pydoc.render_doc(value, renderer=pydoc.plaintext)
        assert f"{name}{signature}" in text and value.__doc__.split("\n")[0] in text, name
    assert list(inspect.signature(shancoll.allreduce).parameters)[:5] == [
        "comm", "sendbuf", "recvbuf", "op", "algorithm",
    ]  # fmt: skip


NOT_ON_A_COMMUNICATOR = {"algorithms", "on_error", "reduction_kernels", "reload_environment",
                         "rules_info", "rules_path", "set_on_error", "set_rules",
                         "startall"}  # fmt: skip
