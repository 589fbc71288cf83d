# Type stub of the C++ extension (src/cpp/bindings/module.cc). Internal: use
# the functions of the shancoll package, which parse buffer specs and check
# arguments; counts and displacements here are in bytes.
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

class ArgumentError(ValueError): ...
class CollectiveTimeout(TimeoutError): ...
class MPIError(RuntimeError): ...

has_hwloc: bool

def allgatherv(
    comm: MPI.Comm,
    send: Any,
    recv: Any,
    counts: list[int],
    displs: list[int],
    algorithm: str = "",
    block_size: int = 0,
    transport: str = "two_sided",
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> None: ...
def allgatherv_shared(
    comm: MPI.Comm,
    send: Any,
    counts: list[int],
    displs: list[int],
    block_size: int = 0,
    transport: str = "two_sided",
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> memoryview: ...
def last_stats(comm: MPI.Comm) -> dict[str, Any]: ...
def algorithms(collective: str) -> list[tuple[str, str]]: ...
def topology(comm: MPI.Comm, ranks_per_node: int = -1, timeout: float = 0.0) -> dict[str, Any]: ...
def reduction_kernels() -> dict[str, Any]: ...
def set_pause(name: str) -> None: ...
def set_on_error(mode: str) -> None: ...
def on_error() -> str: ...

# The builtin entries (bindings/entry.h): each runs the plain call (ndarrays,
# an MPI.Op, no options) in C++ and passes any other call to `impl`.
def allreduce_entry(impl: Callable[..., Any], split_phase: bool) -> Callable[..., Any]: ...
def bcast_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...
def allgatherv_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...
def allgather_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...
def allgatherv_shared_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...
def allgather_shared_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...
def reduce_entry(impl: Callable[..., Any]) -> Callable[..., Any]: ...

# allreduce (bindings/allreduce.cc), the general path: buffers parsed in Python.
def allreduce(
    comm: MPI.Comm,
    send: Any,
    recv: Any,
    kind: str,
    itemsize: int,
    op: MPI.Op,
    algorithm: str = "",
    ports: int = 0,
    ranks_per_node: int = -1,
    timeout: float = 0.0,
    consistent: bool = True,
) -> None: ...

class AllreduceRequest:
    op_to_free: MPI.Op | None
    def test(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> None: ...
    @property
    def done(self) -> bool: ...
    @property
    def test_calls(self) -> int: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def rounds(self) -> int: ...

def iallreduce(
    comm: MPI.Comm,
    send: Any,
    recv: Any,
    kind: str,
    itemsize: int,
    op: MPI.Op,
    algorithm: str = "",
    ports: int = 0,
    ranks_per_node: int = -1,
    consistent: bool = True,
) -> AllreduceRequest: ...
def nway_plan(size: int, ports: int = 0) -> dict[str, Any]: ...
def inter_allgatherv(
    comm: MPI.Intercomm,
    send: Any,
    recv: Any,
    counts: list[int],
    displs: list[int],
    regular: bool = False,
    algorithm: str = "",
    intra_algorithm: str = "",
    block_size: int = 0,
    transport: str = "two_sided",
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> None: ...
def inter_last_stats(comm: MPI.Intercomm) -> dict[str, Any]: ...

# bcast, reduce, release_gather options (bindings/release_gather.cc)
def bcast(
    comm: MPI.Comm,
    buf: Any,
    root: int,
    algorithm: str = "",
    options: dict[str, Any] = ...,
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> None: ...
def reduce(
    comm: MPI.Comm,
    send: Any,
    recv: Any,
    kind: str,
    itemsize: int,
    count: int,
    op: MPI.Op,
    root: int,
    algorithm: str = "",
    options: dict[str, Any] = ...,
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> None: ...
def allreduce_release_gather(
    comm: MPI.Comm,
    send: Any,
    recv: Any,
    kind: str,
    itemsize: int,
    op: MPI.Op,
    algorithm: str = "auto",
    options: dict[str, Any] = ...,
    ranks_per_node: int = -1,
    timeout: float = 0.0,
) -> None: ...
