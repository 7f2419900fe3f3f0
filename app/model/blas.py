"""The models' weight products, x·B in float32, through Intel's MKL when its wheel is installed
(pip install "attention-3d[mkl]"), else through NumPy's own BLAS (OpenBLAS, in NumPy's wheels).

    matmul(x, b)     x (r, k) · b (k, n) → (r, n) float32; b may be a transposed view (a weight
                     stored (out, in) and read as Wᵀ), and x may be some rows of a larger array
    name()           which BLAS does the products: "MKL 2026.2.1", or NumPy's ("OpenBLAS 0.3.31")
    using("numpy")   NumPy's products inside a with block, MKL installed or not (tests, benches)

Why a second BLAS: a layer's products are most of a prompt's forward. On this project's test machine
(a Xeon with AVX-512, one core), SmolLM2's four products of a 150-row block took 7.6 ms with OpenBLAS
and 6.0 ms with MKL, the library torch (and so transformers) multiplies with; 2 to 8 rows (a short
prompt, or a token being written with its weights split over the cores) about twice as quick.
One row (a token being written) stays with NumPy: there OpenBLAS's matrix × vector is the quicker.

MKL is reached through its one dynamic library, mkl_rt, with ctypes, and set to its sequential
threading layer before its first product: the forward spreads its rows over the cores itself
(app.model.nn.parallel), each worker's products on one core, as it keeps NumPy's BLAS to one
thread a call (nn.single_threaded_blas). ctypes lets go of the GIL for the call, so the workers'
products run at once. MKL's products differ from OpenBLAS's by float32 rounding only (tested
against float64 in tests/model/test_blas.py, and the models against transformers with either BLAS).

ATTENTION_BLAS=numpy in the environment leaves MKL out of the products altogether.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

log = logging.getLogger("attention3d")

# mkl_service.h / mkl_cblas.h
_SEQUENTIAL, _LP64 = 1, 0  # MKL_THREADING_SEQUENTIAL, MKL_INTERFACE_LP64 (32-bit integers: ctypes.c_int below)
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CblasRowMajor, CblasNoTrans, CblasTrans
_LIBRARY = re.compile(r"(lib)?mkl_rt(\.\d+)*\.(so|dll|dylib)(\.\d+)*$")
_F32 = np.dtype(np.float32)


class _Mkl:
    """mkl_rt, loaded, in its sequential threading layer: its cblas_sgemm."""

    def __init__(self, path: Path, version: str) -> None:
        lib = ctypes.CDLL(str(path))
        lib.MKL_Set_Threading_Layer.argtypes = lib.MKL_Set_Interface_Layer.argtypes = [ctypes.c_int]
        if lib.MKL_Set_Interface_Layer(_LP64) != _LP64 or lib.MKL_Set_Threading_Layer(_SEQUENTIAL) != _SEQUENTIAL:
            raise OSError("MKL did not take its sequential threading layer (another part of the program set one)")
        i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
        self.sgemm = lib.cblas_sgemm
        self.sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
        self.sgemm.restype = None
        self.name = f"MKL {version}"


_lock = threading.Lock()
_mkl: _Mkl | None = None
_wanted: Literal["mkl", "numpy"] = "numpy" if os.environ.get("ATTENTION_BLAS") == "numpy" else "mkl"
_tried = False  # whether MKL's library was looked for (once a process)


def _library() -> tuple[Path, str] | None:
    """Where the mkl wheel put mkl_rt, and the wheel's version, if it is installed."""
    try:
        dist = metadata.distribution("mkl")
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if _LIBRARY.match(file.name):
            return Path(str(dist.locate_file(file))), dist.version
    return None


def _load() -> _Mkl | None:
    """MKL, loaded on the first product that wants it; None where it is not installed (or will not load)."""
    global _mkl, _tried
    with _lock:
        if not _tried:
            _tried = True
            found = _library()
            if found is not None:
                try:
                    _mkl = _Mkl(*found)
                except (OSError, AttributeError) as e:  # a broken install: NumPy's products, and one line saying so
                    log.warning("MKL is installed but did not load (%s): NumPy's BLAS does the products", e)
        return _mkl


def available() -> bool:
    """Whether MKL is installed and loads."""
    return _load() is not None


@contextlib.contextmanager
def using(which: Literal["mkl", "numpy"]) -> Iterator[None]:
    """MKL's products (where installed) or NumPy's inside the block, for the whole process; as before after it."""
    global _wanted
    before, _wanted = _wanted, which
    try:
        yield
    finally:
        _wanted = before


def name() -> str:
    """The BLAS that multiplies many rows now: "MKL 2026.2.1", or NumPy's, as "OpenBLAS 0.3.31"."""
    mkl = _load() if _wanted == "mkl" else None
    if mkl is not None:
        return mkl.name
    from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

    numpys = [i for i in threadpool_info() if i["user_api"] == "blas" and "numpy" in i["filepath"]]
    mine = numpys or [i for i in threadpool_info() if i["user_api"] == "blas"]
    return f"{mine[0]['internal_api'].replace('openblas', 'OpenBLAS')} {mine[0]['version']}" if mine else "NumPy's BLAS"


def matmul(x: Any, b: Any) -> Any:
    """x (r, k) · b (k, n) → (r, n): MKL's sgemm for float32 arrays of two rows or more, when MKL is
    installed and wanted, else x @ b (torch tensors too)."""
    mkl = _mkl if _tried else _load()
    if mkl is None or _wanted != "mkl" or not isinstance(x, np.ndarray) or not isinstance(b, np.ndarray):
        return x @ b
    if x.ndim != 2 or b.ndim != 2 or x.dtype != _F32 or b.dtype != _F32 or x.shape[0] < 2:
        return x @ b
    (r, k), n = x.shape, b.shape[1]
    lda, (s0, s1) = x.strides[0] // 4, b.strides
    if b.shape[0] != k or min(r, k, n) == 0 or x.strides[1] != 4 or x.strides[0] % 4 or lda < k:
        return x @ b
    if s1 == 4 and s0 % 4 == 0 and s0 // 4 >= n:  # b row by row
        trans, ldb = _NO_TRANS, s0 // 4
    elif s0 == 4 and s1 % 4 == 0 and s1 // 4 >= k:  # b column by column: bᵀ row by row (a weight read as Wᵀ)
        trans, ldb = _TRANS, s1 // 4
    else:
        return x @ b
    out = np.empty((r, n), dtype=np.float32)
    a, c = x.ctypes.data, out.ctypes.data
    mkl.sgemm(_ROW_MAJOR, _NO_TRANS, trans, r, n, k, 1.0, a, lda, b.ctypes.data, ldb, 0.0, c, n)  # c = a·b
    return out
