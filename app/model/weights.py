"""model.safetensors as a dict of NumPy float32 arrays named as in the model's own code.

A head-less model (BertModel, GPT2Model) saves names like "encoder.layer.0…"; a model with a
head on top saves them under a prefix ("bert.", "transformer."), which is dropped here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from app.errors import ModelError

Weights = dict[str, np.ndarray]
_PREFIXES = ("bert.", "transformer.", "model.")


def load_weights(path: Path, required: tuple[str, ...]) -> Weights:
    """The tensors of `path`, float32 and read-only, checked to include `required` names."""
    try:
        raw = load_file(str(path))
    except Exception as e:  # safetensors raises its own error types for a damaged file
        raise ModelError(f"{path} cannot be read as safetensors: {e}") from None
    out: Weights = {}
    for name, tensor in raw.items():
        for prefix in _PREFIXES:
            if name.startswith(prefix) and name[len(prefix) :] not in raw:
                name = name[len(prefix) :]
                break
        arr = np.ascontiguousarray(tensor, dtype=np.float32)
        if not np.isfinite(arr).all():
            raise ModelError(_not_finite(path, name, arr))
        arr.flags.writeable = False
        out[name] = arr
    missing = [r for r in required if r not in out]
    if missing:
        raise ModelError(f"{path} lacks {len(missing)} tensors, e.g. {missing[:3]}")
    return out


def _not_finite(path: Path, name: str, arr: np.ndarray) -> str:
    bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    return f"{path}: {name} holds {bad:,} values that are NaN or infinite (as float32): the weights are damaged"


def check_finite(path: Path) -> None:
    """ModelError when a tensor of `path` holds NaN or ±inf (as float32, the numbers the forward uses).
    Tensors are read one at a time: checking costs one tensor's memory, not the model's."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "np") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open is not iterable)
                arr = np.asarray(f.get_tensor(name), dtype=np.float32)
                if not np.isfinite(arr).all():
                    raise ModelError(_not_finite(path, name, arr))
    except ModelError:
        raise
    except Exception as e:  # safetensors raises its own error types for a damaged file
        raise ModelError(f"{path} cannot be read as safetensors: {e}") from None
