"""A Llama model's weights as the forward pass multiplies by them: each layer's q, k, v matrices
joined into one and its gate and up into one (one product where there were three, and two), every
layer matrix W (out, in) laid out column by column (Fortran order, so that Wᵀ in x·Wᵀ is an
ordinary row-major (in, out) matrix), and, in a converted GGUF folder
(app.model.families.llama.gguf), every kind of layer weight stacked over the layers in one .npy
file, read whole into the process's memory at the next start (read_joined).

The layout: OpenBLAS multiplied a prompt's blocks of ~150 rows by a column-major W 9–13% quicker
than by the transpose of a row-major one (the four products of a SmolLM2 layer, one core), and a
written token's single row as quickly (the VM of 6 Dec; on 7 Dec's the whole forward took the same
in either layout, 366 against 371 ms: docs/speed.md); bert.column_major does the same for BERT.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from app.model import nn
from app.model.families.base import ModelSpec
from app.model.families.llama.config import JOINED, LAYER, LAYER_KINDS, joined, parts, top
from app.model.weights import Weights

JOINED_DIR = "joined"  # a converted folder's weights: one .npy file per stacked_shapes() name


def stacked_name(kind: str) -> str:
    """The name of a kind of layer weight stacked over the layers: "layers.<kind>" (L, …)."""
    return "layers." + kind


def stacked_shapes(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """What a converted folder's joined/ holds: each kind stacked over the layers, a matrix as its
    transpose (L, in, out) (unstacked() gives W (out, in) back as a column-major view), a norm as
    it is (L, C); and the top tensors as they are (the embeddings' rows are looked up)."""
    return {stacked_name(kind): (s.layers, *shape[::-1]) for kind, shape in joined(s).items()} | top(s)


def split(weights: Weights, prefix: str, name: str, big: np.ndarray, s: ModelSpec) -> None:
    """The separate names of joined matrix `name` of layer `prefix` as row views of it (no extra memory)."""
    start, one = 0, parts(s)
    for piece in JOINED[name]:
        rows = one[piece][0]
        weights[prefix + piece] = big[start : start + rows]
        start += rows


_fuse_lock = threading.Lock()


def fuse(weights: Weights, s: ModelSpec) -> None:
    """Once per model (a safetensors folder; a converted GGUF's are laid out already): each layer's
    q, k, v projections joined into one (h·d + 2·h_kv·d, C) matrix and its gate and up projections
    into one (2F, C), the separate names kept as row views of them, and every layer matrix
    column-major. The same numbers; one copy of the weights, once."""
    done = LAYER.format(s.layers - 1) + list(JOINED)[-1]
    if done in weights:
        return
    with _fuse_lock:
        if done in weights:
            return
        for i in range(s.layers):
            p = LAYER.format(i)
            for kind in LAYER_KINDS:
                if kind in JOINED:
                    big = np.asfortranarray(np.concatenate([weights[p + piece] for piece in JOINED[kind]]))
                else:
                    big = np.asfortranarray(weights[p + kind]) if weights[p + kind].ndim == 2 else weights[p + kind]
                big.flags.writeable = False
                if kind in JOINED:
                    split(weights, p, kind, big, s)  # the separate copies can go
                weights[p + kind] = big  # the last layer's last: its presence says every layer is done


def unstacked(stacks: Mapping[str, np.ndarray], s: ModelSpec) -> Weights:
    """A converted folder's stacked arrays as the forward's weights: every name a view, none copied."""
    weights: Weights = {name: np.asarray(a) for name, a in stacks.items() if not name.startswith("layers.")}
    for i in range(s.layers):
        p = LAYER.format(i)
        for kind in LAYER_KINDS:
            a = np.asarray(stacks[stacked_name(kind)][i])  # (in, out) or (C,): a plain view
            weights[p + kind] = a.T if a.ndim == 2 else a  # (out, in), column-major
            if kind in JOINED:
                split(weights, p, kind, weights[p + kind], s)
    return weights


def read_joined(folder: Path, s: ModelSpec) -> Weights:
    """The forward's weights of a converted folder, read from joined/ into arrays of their own,
    read-only, by the forward's workers (the largest file first, so that they finish together).
    Their values were checked finite when the folder was made.

    Read, not memory-mapped: NumPy asks Linux for 2 MiB pages for an array this large (madvise),
    where a mapped file is served in 4 KiB ones. A written token reads every weight once (540 MB for
    SmolLM2), and its step took 33.4–34.0 ms from 2 MiB pages, 35.4–36.3 from the file's (the
    processor walks the page table for each new page it reads). Reading costs 0.1–0.2 s at the
    start, and each worker process holds its own copy."""
    shapes = stacked_shapes(s)
    names = sorted(shapes, key=lambda name: -math.prod(shapes[name]))
    arrays = nn.parallel(lambda name: np.load(folder / JOINED_DIR / f"{name}.npy"), names)
    for a in arrays:
        a.flags.writeable = False
    return unstacked(dict(zip(names, arrays, strict=True)), s)
