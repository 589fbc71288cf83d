"""Buffer-spec parsing: mpi4py-style message specifications -> arrays and byte layouts.

The C++ core moves bytes: it takes one contiguous buffer per side plus byte
counts and byte displacements. This module turns what a user passes (a NumPy
array, any buffer-protocol object, or an mpi4py-style list/tuple spec) into
that, following mpi4py's rules (``src/mpi4py/MPI/msgbuffer.pxi``):

Receive buffer of a *v*-collective (``message_vector``)::

    buf                                  counts: the buffer split evenly over P ranks
                                         (the first size % P ranks get one more)
    [buf, datatype]
    [buf, counts]                        counts: a sequence, or one integer for all
    [buf, (counts, displs)]              displs: a sequence, or one integer (stride)
    [buf, counts, datatype]
    [buf, (counts, displs), datatype]
    [buf, counts, displs]                (shancoll extension: 3rd item not a datatype)
    [buf, counts, displs, datatype]

Send buffer, and the receive buffer of a block collective (``message_simple``)::

    buf, [buf, datatype], [buf, count], [buf, (count, displ)], [buf, count, datatype],
    [buf, (count, displ), datatype], [buf, count, displ, datatype]

Counts and displacements are in elements of the datatype; displacements
default to the exclusive prefix sum of the counts. ``MPI.IN_PLACE`` (or
``None``, as in mpi4py) as send buffer means in place.

Stricter than mpi4py (which leaves these to the MPI library or to chance):
an explicit datatype must describe the array's dtype (``MPI.BYTE`` is
accepted with any array and makes counts bytes), the send count must equal
``counts[rank]``, send and receive element types must be equal, and every
violation is a ``ValueError`` naming the argument.

The layout computation (element counts -> byte counts, displacements,
extent) is cached per (counts, displs, element size, P), so that repeated
calls with the same counts do no per-rank Python work.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from mpi4py import MPI
from mpi4py.util import dtlib

from . import _core

ArgumentError = _core.ArgumentError

_IN_PLACE = MPI.IN_PLACE
_Datatype = MPI.Datatype
_ndarray = np.ndarray
_BYTE_DTYPE = np.dtype(np.uint8)
_MPI_BYTE = MPI.BYTE


def is_in_place(obj: Any) -> bool:
    """mpi4py's rule: ``MPI.IN_PLACE`` or ``None`` is 'in place'."""
    return obj is None or obj is _IN_PLACE


# ---------------------------------------------------------------------------
# arrays


def as_array(obj: Any, name: str, writable: bool) -> np.ndarray:
    """A C-contiguous ndarray over the same memory as ``obj`` (never a copy)."""
    if type(obj) is not _ndarray:
        if isinstance(obj, _ndarray):
            pass
        elif obj is None or obj is _IN_PLACE:
            raise ArgumentError(f"{name}: a buffer is required here, got {obj!r}")
        else:
            try:
                obj = np.asarray(memoryview(obj))
            except (TypeError, ValueError, BufferError, NotImplementedError) as e:
                raise ArgumentError(
                    f"{name}: expected a NumPy array, a buffer-protocol object or an mpi4py "
                    f"buffer spec, got {type(obj).__name__} ({e})"
                ) from None
    flags = obj.flags
    if not flags.c_contiguous:
        if flags.f_contiguous:
            obj = obj.T  # same memory, C order
        else:
            raise ArgumentError(
                f"{name}: the array is not contiguous (use numpy.ascontiguousarray); "
                f"strides {obj.strides} for shape {obj.shape}"
            )
    if writable and not flags.writeable:
        raise ArgumentError(f"{name}: the array is read-only, the result cannot be written to it")
    if obj.dtype.hasobject:
        raise ArgumentError(f"{name}: arrays of Python objects (dtype {obj.dtype}) cannot be sent")
    return obj


# ---------------------------------------------------------------------------
# datatypes

_datatype_cache: dict[Any, np.dtype] = {}


def _is_datatype(obj: Any) -> bool:
    return isinstance(obj, (_Datatype, str))


def element_dtype(arr: np.ndarray, datatype: Any, name: str) -> np.dtype:
    """The element type of ``arr`` as described by ``datatype`` (None: the array's dtype).

    The result's itemsize is the unit of counts and displacements. ``MPI.BYTE``
    fits any array (counts are then bytes); any other datatype must describe
    the array's dtype (a contiguous derived type of it counts as one element).
    """
    if datatype is None:
        return arr.dtype
    hit = _by_identity.get(id(datatype))
    if hit is not None and hit[0] is datatype:
        el = hit[1]  # a predefined datatype (or typecode) seen before
    else:
        el = _identify(datatype, name)
    if el is None:  # MPI.BYTE
        return _BYTE_DTYPE
    dt = arr.dtype
    if el is dt:
        return el
    base = el.base if el.shape else el
    if base != dt:
        raise ArgumentError(
            f"{name}: the MPI datatype {_datatype_name(datatype)} describes {el}, but the array "
            f"has dtype {arr.dtype}"
        )
    return el


# Predefined datatypes and typecodes never change meaning: cache them by object
# identity (Datatype objects are unhashable; the entry keeps the object alive,
# so its id cannot be reused). None stands for MPI.BYTE.
_by_identity: dict[int, tuple[Any, np.dtype | None]] = {}


def _identify(datatype: Any, name: str) -> np.dtype | None:
    if datatype_is_byte(datatype):
        el = None
    else:
        el = _resolve_datatype(datatype, name)
    if isinstance(datatype, str) or datatype.is_predefined:
        if len(_by_identity) > 256:
            _by_identity.clear()
        _by_identity[id(datatype)] = (datatype, el)
    return el


def datatype_is_byte(datatype: Any) -> bool:
    return datatype is _MPI_BYTE or (isinstance(datatype, _Datatype) and datatype == _MPI_BYTE)


def _datatype_name(datatype: Any) -> str:
    if isinstance(datatype, str):
        return repr(datatype)
    try:
        return datatype.Get_name() or repr(datatype)
    except Exception:
        return repr(datatype)


def _resolve_datatype(datatype: Any, name: str) -> np.dtype:
    """MPI datatype (or mpi4py typecode string) -> NumPy dtype, cached for predefined types."""
    key = datatype
    if isinstance(datatype, str):
        cached = _datatype_cache.get(datatype)
        if cached is not None:
            return cached
        try:
            datatype = MPI._typedict[datatype]
        except KeyError:
            raise ArgumentError(
                f"{name}: cannot map typecode {datatype!r} to an MPI datatype"
            ) from None
    elif isinstance(datatype, _Datatype):
        if datatype == MPI.DATATYPE_NULL:
            raise ArgumentError(f"{name}: the datatype is MPI.DATATYPE_NULL")
        if datatype.is_predefined:
            key = ("handle", datatype.handle)
            cached = _datatype_cache.get(key)
            if cached is not None:
                return cached
        else:
            key = None  # derived types: handles can be reused after Free
    else:
        raise ArgumentError(f"{name}: expected an MPI datatype, got {type(datatype).__name__}")
    if datatype == _MPI_BYTE:
        el = _BYTE_DTYPE
    else:
        try:
            el = dtlib.to_numpy_dtype(datatype)
        except Exception as e:
            raise ArgumentError(
                f"{name}: the MPI datatype {_datatype_name(datatype)} has no NumPy equivalent ({e})"
            ) from None
        lb, extent = datatype.Get_extent()
        if lb != 0 or extent != datatype.Get_size() or el.itemsize != extent:
            raise ArgumentError(
                f"{name}: the MPI datatype {_datatype_name(datatype)} is not contiguous "
                f"(lb {lb}, extent {extent}, size {datatype.Get_size()}); shancoll moves "
                f"contiguous elements only"
            )
    if key is not None:
        if len(_datatype_cache) > 256:
            _datatype_cache.clear()
        _datatype_cache[key] = el
    return el


def as_numpy_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """A NumPy dtype from a NumPy dtype-like, an MPI datatype or an mpi4py typecode."""
    if isinstance(dtype, _Datatype):
        return _resolve_datatype(dtype, name)
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise ArgumentError(f"{name}: not a dtype: {dtype!r} ({e})") from None


# ---------------------------------------------------------------------------
# spec unpacking (mpi4py's rules)


def _index(value: Any, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentError(f"{name}: expected an integer, got {value!r}") from None


def _is_integral(obj: Any) -> bool:
    """mpi4py's is_integral: an index that is not a sequence (0-d arrays count)."""
    if isinstance(obj, int):
        return True
    if isinstance(obj, (list, tuple)):
        return False
    if isinstance(obj, _ndarray):
        return obj.ndim == 0 and obj.dtype.kind in "iu"
    return hasattr(obj, "__index__") and not hasattr(obj, "__len__")


def unpack_vector(msg: Any, name: str) -> tuple[Any, Any, Any, Any]:
    """(buf, counts, displs, datatype) of a v-collective receive spec."""
    if isinstance(msg, (list, tuple)):
        n = len(msg)
        counts = displs = datatype = None
        if n == 2:
            buf, counts = msg
            if _is_datatype(counts):
                counts, datatype = None, counts
            elif isinstance(counts, tuple):
                counts, displs = _pair(counts, name)
        elif n == 3:
            buf, counts, third = msg
            if _is_datatype(third) or third is None:
                datatype = third
                if isinstance(counts, tuple):
                    counts, displs = _pair(counts, name)
            else:  # [buf, counts, displs]
                displs = third
        elif n == 4:
            buf, counts, displs, datatype = msg
        else:
            raise ArgumentError(f"{name}: a buffer spec has 2 to 4 items, got {n}")
        return buf, counts, displs, datatype
    return msg, None, None, None


def unpack_simple(msg: Any, name: str) -> tuple[Any, Any, Any, Any]:
    """(buf, count, displ, datatype) of a send spec or a block-collective receive spec."""
    if isinstance(msg, (list, tuple)):
        n = len(msg)
        count = displ = datatype = None
        if n == 2:
            buf, count = msg
            if _is_datatype(count):
                count, datatype = None, count
            elif isinstance(count, (tuple, list)):
                count, displ = _pair(count, name)
        elif n == 3:
            buf, count, datatype = msg
            if isinstance(count, (tuple, list)):
                count, displ = _pair(count, name)
        elif n == 4:
            buf, count, displ, datatype = msg
        else:
            raise ArgumentError(f"{name}: a buffer spec has 2 to 4 items, got {n}")
        return buf, count, displ, datatype
    return msg, None, None, None


def _pair(value: tuple | list, name: str) -> tuple[Any, Any]:
    if len(value) != 2:
        raise ArgumentError(
            f"{name}: a (counts, displs) pair has 2 items, got {len(value)}; pass counts as "
            f"a list (a tuple in this position means (counts, displs), as in mpi4py)"
        )
    return value[0], value[1]


# ---------------------------------------------------------------------------
# simple messages


def simple_message(
    msg: Any, name: str, writable: bool, blocks: int = 1
) -> tuple[np.ndarray, np.dtype, int, int]:
    """Parses a simple spec: (array, element dtype, count, offset in elements).

    With ``blocks`` > 1 (block-collective receive) an inferred count is the
    per-block count, and the buffer must divide evenly.
    """
    buf, count, displ, datatype = unpack_simple(msg, name)
    arr = as_array(buf, name, writable)
    el = element_dtype(arr, datatype, name)
    esize = el.itemsize
    nbytes = arr.nbytes
    offset = 0
    if displ is not None:
        offset = _index(displ, f"{name} displacement")
        if offset < 0:
            raise ArgumentError(f"{name}: negative displacement {offset}")
        if offset * esize > nbytes:
            raise ArgumentError(
                f"{name}: displacement {offset} is past the end of the buffer "
                f"({nbytes // esize if esize else 0} elements)"
            )
    avail = nbytes - offset * esize
    if count is not None:
        count = _index(count, f"{name} count")
        if count < 0:
            raise ArgumentError(f"{name}: negative count {count}")
        if count * blocks * esize > avail:
            need = f"{blocks} x {count}" if blocks > 1 else f"{count}"
            raise ArgumentError(
                f"{name}: count {need} elements of {esize} bytes exceeds the buffer ({avail} bytes)"
            )
    else:
        if esize == 0 or avail % esize:
            raise ArgumentError(
                f"{name}: cannot infer the count: {avail} bytes is not a multiple of the "
                f"element size {esize}"
            )
        elems = avail // esize
        if blocks > 1:
            if elems % blocks:
                raise ArgumentError(
                    f"{name}: cannot infer the count per rank: {elems} elements is not a "
                    f"multiple of the {blocks} ranks"
                )
            elems //= blocks
        count = elems
    return arr, el, count, offset


def byte_view(arr: np.ndarray, offset_bytes: int, nbytes: int) -> np.ndarray:
    """A flat uint8 view of ``nbytes`` bytes at ``offset_bytes`` (no copy)."""
    flat = arr.reshape(-1).view(np.uint8)
    return flat[offset_bytes : offset_bytes + nbytes]


def send_array(
    sendbuf: Any, el_recv: np.dtype | None, want: int, rank: int, name: str = "sendbuf"
) -> np.ndarray:
    """The send buffer for the core, checked against the receive side.

    ``el_recv`` is the receive element type (None: no receive side, the
    send side decides); ``want`` is counts[rank] in elements.
    """
    if type(sendbuf) is _ndarray:  # fast path: a plain array, no spec
        el = sendbuf.dtype
        if (
            sendbuf.size == want
            and (el is el_recv or el_recv is None or el == el_recv)
            and sendbuf.flags.c_contiguous
            and not el.hasobject
        ):
            return sendbuf
    arr, el, count, offset = simple_message(sendbuf, name, False)
    if el_recv is not None and el != el_recv:
        raise ArgumentError(
            f"{name}: element type {_el_name(el)} does not match the receive buffer's "
            f"{_el_name(el_recv)} (rank {rank})"
        )
    if count != want:
        raise ArgumentError(
            f"{name}: sends {count} elements but the receive counts give rank {rank} "
            f"{want} (counts[{rank}] = {want})"
        )
    if offset == 0 and arr.nbytes == count * el.itemsize:
        return arr
    return byte_view(arr, offset * el.itemsize, count * el.itemsize)


def _el_name(el: np.dtype) -> str:
    return "MPI.BYTE/uint8" if el is _BYTE_DTYPE else str(el)


# ---------------------------------------------------------------------------
# vector layouts (cached)

_layout_cache: dict[tuple, tuple[list[int], list[int], int]] = {}
_LAYOUT_CACHE_MAX = 128


def _key_of(value: Any) -> Any:
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, _ndarray):
        return tuple(value.tolist()) if value.ndim else int(value)
    try:
        return tuple(value)
    except TypeError:
        return value  # an index-like scalar; validated on the miss path


def vector_layout(
    counts: Any, displs: Any, esize: int, size: int, total_elems: int
) -> tuple[list[int], list[int], int]:
    """(byte counts, byte displs, extent in bytes), cached.

    ``counts=None`` splits ``total_elems`` evenly (mpi4py's rule).
    """
    key: tuple | None
    if counts is None:
        key = (None, total_elems, _key_of(displs), esize, size)
    else:
        key = (_key_of(counts), _key_of(displs), esize, size)
    try:
        hit = _layout_cache.get(key)
    except TypeError:  # unhashable items
        hit, key = None, None
    if hit is not None:
        return hit
    hit = _compute_layout(counts, displs, esize, size, total_elems)
    if key is not None:
        if len(_layout_cache) >= _LAYOUT_CACHE_MAX:
            _layout_cache.clear()
        _layout_cache[key] = hit
    return hit


def _int_list(value: Any, size: int, name: str) -> list[int]:
    if isinstance(value, _ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise ArgumentError(
                f"{name}: expected a 1-d integer sequence, got an array of shape {value.shape} "
                f"and dtype {value.dtype}"
            )
        out = value.tolist()
    else:
        try:
            out = [operator.index(v) for v in value]
        except TypeError:
            raise ArgumentError(
                f"{name}: expected a sequence of integers (one per rank), got {value!r:.200}"
            ) from None
    if len(out) != size:
        raise ArgumentError(
            f"{name}: expected {size} entries (one per rank of the communicator), got {len(out)}"
        )
    return out


def _compute_layout(
    counts: Any, displs: Any, esize: int, size: int, total_elems: int
) -> tuple[list[int], list[int], int]:
    if counts is None:
        q, r = divmod(total_elems, size)
        c = [q + (1 if i < r else 0) for i in range(size)]
    elif _is_integral(counts):
        v = _index(counts, "counts")
        c = [v] * size
    else:
        c = _int_list(counts, size, "counts")
    for i, v in enumerate(c):
        if v < 0:
            raise ArgumentError(f"counts: negative count {v} for rank {i}")
    if displs is None:
        d = []
        acc = 0
        for v in c:
            d.append(acc)
            acc += v
    elif _is_integral(displs):
        stride = _index(displs, "displs")
        d = [stride * i for i in range(size)]
    else:
        d = _int_list(displs, size, "displs")
    for i, v in enumerate(d):
        if v < 0:
            raise ArgumentError(f"displs: negative displacement {v} for rank {i}")
    extent = 0
    for ci, di in zip(c, d, strict=True):
        if ci > 0 and ci + di > extent:
            extent = ci + di
    if esize == 1:
        return c, d, extent
    return [v * esize for v in c], [v * esize for v in d], extent * esize


# One-entry memo in front of the layout cache for the common case of the same
# counts/displs lists call after call: list equality runs in C and needs no
# tuple or hash; a copy is kept so that in-place changes are seen.
_memo: list = [(None, None, -1, -1, None)]  # one tuple: counts, displs, esize, size, layout


def _memo_layout(counts: list, displs: list | None, esize: int, size: int):
    m = _memo[0]  # read once: another thread may replace it, never mutate it
    if m[2] == esize and m[3] == size and counts == m[0] and displs == m[1]:
        return m[4]
    hit = vector_layout(counts, displs, esize, size, 0)
    _memo[0] = (counts.copy(), None if displs is None else displs.copy(), esize, size, hit)
    return hit


def vector_message(msg: Any, size: int, name: str = "recvbuf"):
    """Parses a v-collective receive spec.

    Returns (array, element dtype, byte counts, byte displs, extent in bytes);
    the array is the whole buffer (displacements are from its start).
    """
    tm = type(msg)
    if tm is list or tm is tuple:
        # fast path: [array, counts(list)], [array, counts, displs(list)],
        # [array, counts, displs, datatype]
        n = len(msg)
        arr = msg[0]
        counts = msg[1] if n > 1 else None
        if type(arr) is _ndarray and type(counts) is list and 2 <= n <= 4:
            displs = datatype = None
            if n >= 3:
                displs = msg[2]
                if n == 4:
                    datatype = msg[3]
                if displs is not None and type(displs) is not list:
                    return _vector_message(msg, size, name)
            flags = arr.flags
            if flags.c_contiguous and flags.writeable and not arr.dtype.hasobject:
                el = arr.dtype if datatype is None else element_dtype(arr, datatype, name)
                if el.itemsize:
                    bcounts, bdispls, extent = _memo_layout(counts, displs, el.itemsize, size)
                    if extent > arr.nbytes:
                        _too_small(name, extent, arr.nbytes, el.itemsize)
                    return arr, el, bcounts, bdispls, extent
    return _vector_message(msg, size, name)


def _too_small(name: str, extent: int, nbytes: int, esize: int):
    raise ArgumentError(
        f"{name}: too small: the counts and displacements need {extent // esize} elements "
        f"({extent} bytes), the buffer has {nbytes // esize} ({nbytes} bytes)"
    )


_even_cache: dict[tuple[int, int, int], tuple[list[int], list[int], int]] = {}


def _vector_message(msg: Any, size: int, name: str):
    if type(msg) is _ndarray:
        flags = msg.flags
        if flags.c_contiguous and flags.writeable:
            # a plain array: counts split evenly (mpi4py's rule)
            el = msg.dtype
            key = (msg.nbytes, el.itemsize, size)
            hit = _even_cache.get(key)
            if hit is not None and not el.hasobject:
                return (msg, el, *hit)
    if type(msg) is _ndarray and msg.flags.c_contiguous and msg.flags.writeable:
        arr = msg
        el = arr.dtype
        if el.hasobject:
            raise ArgumentError(f"{name}: arrays of Python objects (dtype {el}) cannot be sent")
        counts = displs = None
    else:
        buf, counts, displs, datatype = unpack_vector(msg, name)
        arr = as_array(buf, name, True)
        el = element_dtype(arr, datatype, name)
    esize = el.itemsize
    if not esize:
        raise ArgumentError(f"{name}: elements of size 0 (dtype {el}) cannot be sent")
    total = 0
    if counts is None:
        if arr.nbytes % esize:
            raise ArgumentError(
                f"{name}: cannot infer counts: {arr.nbytes} bytes is not a multiple of the "
                f"element size {esize}"
            )
        total = arr.nbytes // esize
    bcounts, bdispls, extent = vector_layout(counts, displs, esize, size, total)
    if extent > arr.nbytes:
        _too_small(name, extent, arr.nbytes, esize)
    if counts is None and displs is None and arr is msg:
        if len(_even_cache) >= _LAYOUT_CACHE_MAX:
            _even_cache.clear()
        _even_cache[(arr.nbytes, esize, size)] = (bcounts, bdispls, extent)
    return arr, el, bcounts, bdispls, extent
