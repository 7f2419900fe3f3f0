"""A Llama-family GGUF file (llama.cpp's format) as a model folder, made once and cached.

References:
  llama.cpp, docs of the GGUF format (ggml/docs/gguf.md) and convert_hf_to_gguf.py, whose
  LlamaModel.permute() reorders the rows of attn_q and attn_k within each head for llama.cpp's
  interleaved rotary embedding; `unpermute` below is its inverse, as transformers'
  modeling_gguf_pytorch_utils.LlamaTensorProcessor undoes it.
  The `gguf` package (the llama.cpp project's reader): GGUFReader, gguf.quants.dequantize
  (Q4_1, Q8_0, … blocks back to float32).

A GGUF file holds the model's facts (llama.block_count, …), the tokenizer (tokens, merges, token
types) and the quantized tensors. `folder(path)` turns it, once, into a folder in the data folder
(<data>/models/<name>-v<FORMAT>-<hash>/): config.json (a transformers LlamaConfig), tokenizer.json (as llama.cpp
reads the file's vocabulary: app.model.families.llama.tokenizer), tokenizer_config.json (the chat
template) and joined/, the weights in float32 as the forward pass multiplies by them: each layer's
q/k/v and gate/up matrices joined, every kind stacked over the layers, a matrix as its transpose,
one .npy file per kind (app.model.families.llama.weights), q and k rows back in transformers' order. A start reads
those files whole (weights.read_joined): nothing is joined or converted again.

The conversion streams: a layer's matrix at a time is dequantized, joined and appended to its file,
so it needs the memory of the largest tensor (the embeddings, 113 MB for SmolLM2), not of the
model (a first start with both models answering peaks at ~830 MB; reading every tensor first, 1.5 GB).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from app.errors import ModelError
from app.model.families.base import ModelSpec
from app.model.families.llama import config as names
from app.model.families.llama.tokenizer import tokenizer_json
from app.model.families.llama.weights import JOINED_DIR, stacked_name, stacked_shapes

CACHE_ENV = "ATTENTION_MODEL_CACHE"  # where converted models go (default <data folder>/models)
# bumped when what a converted folder holds changes: the folder's name carries it, so an older
# conversion is never read as a newer one (3: joined/ only, no model.safetensors, the tokenizer as
# llama.cpp reads it; 4: layer matrices stored transposed, mapped column-major)
FORMAT = 4

# llama.cpp's tensor names (after "blk.{i}.") → ours (after "layers.{i}.")
_LAYER_NAMES = {
    "attn_norm": names.ATTN_NORM,
    "attn_q": names.Q,
    "attn_k": names.K,
    "attn_v": names.V,
    "attn_output": names.OUT,
    "ffn_norm": names.MLP_NORM,
    "ffn_gate": names.GATE,
    "ffn_up": names.UP,
    "ffn_down": names.DOWN,
}
_TOP_NAMES = {"token_embd": names.EMBED, "output_norm": names.FINAL_NORM, "output": names.LM_HEAD}
_GGUF_NAME = {ours: f"{theirs}.weight" for theirs, ours in _LAYER_NAMES.items()}
_QUANTIZATION = re.compile(r"[.-](?:I?Q\d\w*|F16|F32|BF16)$", re.IGNORECASE)


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """transformers' q/k rows → llama.cpp's: within each head, rows (0 … d/2−1, d/2 … d−1) interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k rows → transformers' (the inverse of permute): rotary pairs (i, i + d/2)."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def model_name(path: Path) -> str:
    """The model's name from its file's: the stem without llama.cpp's quantization tag
    ("SmolLM2-135M-Instruct.Q4_1.gguf" → "SmolLM2-135M-Instruct"), as GET /api/models names it."""
    return _QUANTIZATION.sub("", path.stem) or path.stem


def _reader(path: Path) -> Any:
    import gguf

    try:
        return gguf.GGUFReader(str(path))
    except Exception as e:  # the reader raises ValueError, struct errors, … for a file that is not GGUF
        raise ModelError(f"{path} cannot be read as GGUF: {e}") from None


def _field(reader: Any, key: str, default: Any = None) -> Any:
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def config(reader: Any, path: Path) -> dict[str, Any]:
    """The file's facts as a transformers LlamaConfig's config.json, or ModelError naming what is unsupported."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ModelError(f"{path}: GGUF architecture {arch!r} is not supported (only 'llama')")

    def need(key: str) -> Any:
        value = _field(reader, f"llama.{key}")
        if value is None:
            raise ModelError(f"{path} lacks llama.{key}")
        return value

    heads, hidden = int(need("attention.head_count")), int(need("embedding_length"))
    kv_heads = int(_field(reader, "llama.attention.head_count_kv", heads))
    head_dim = hidden // heads if heads else 0
    rot = _field(reader, "llama.rope.dimension_count", head_dim)
    if int(rot) != head_dim or int(_field(reader, "llama.attention.key_length", head_dim)) != head_dim:
        raise ModelError(f"{path}: only rotary embeddings over the whole head (size {head_dim}) are supported")
    tensor_names = {t.name for t in reader.tensors}
    if _field(reader, "llama.rope.scaling.type", "none") not in ("none", None) or "rope_freqs.weight" in tensor_names:
        raise ModelError(f"{path}: scaled rotary embeddings (long-context Llama 3) are not supported")
    if _field(reader, "llama.expert_count", 0):
        raise ModelError(f"{path}: mixture-of-experts models are not supported")
    tokens = _field(reader, "tokenizer.ggml.tokens")
    if tokens is None or _field(reader, "tokenizer.ggml.model") != "gpt2":
        raise ModelError(f"{path}: only a byte-level BPE tokenizer (tokenizer.ggml.model 'gpt2') is supported")
    out = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "name": str(_field(reader, "general.name", path.stem)),
        "num_hidden_layers": int(need("block_count")),
        "hidden_size": hidden,
        "intermediate_size": int(need("feed_forward_length")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_field(reader, "llama.rope.freq_base", 10000.0)),
        "max_position_embeddings": int(_field(reader, "llama.context_length", 2048)),
        "vocab_size": len(tokens),
        "hidden_act": "silu",
        "tie_word_embeddings": "output.weight" not in tensor_names,
        "attention_bias": False,
        "mlp_bias": False,
        "torch_dtype": "float32",
    }
    for key in ("bos_token_id", "eos_token_id"):
        value = _field(reader, f"tokenizer.ggml.{key}")
        if value is not None:
            out[key] = int(value)
    return out


def _cache_root() -> Path:
    """$ATTENTION_MODEL_CACHE, else models/ in the data folder the classroom keeps its lessons in
    ($ATTENTION_DATA_DIR, else the platform's per-user data folder, e.g. ~/.local/share/attention3d)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    if os.environ.get("ATTENTION_DATA_DIR"):
        return Path(os.environ["ATTENTION_DATA_DIR"]) / "models"
    import platformdirs

    return Path(platformdirs.user_data_dir("attention3d", appauthor=False)) / "models"


def cached_dir(path: Path) -> Path:
    """Where the converted folder of the GGUF file `path` lives (named by the format, and the file's
    path, size and time)."""
    st = path.stat()
    key = hashlib.sha256(f"{FORMAT}\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return _cache_root() / f"{path.stem}-v{FORMAT}-{key}"


def _done(out: Path) -> bool:
    return (out / "config.json").is_file()  # written last, after joined/ (and the folder renamed into place whole)


def converted(path: Path) -> bool:
    """Whether the GGUF file `path` has its converted folder already (folder() is then quick)."""
    return path.is_file() and _done(cached_dir(path))


def header_config(path: Path) -> dict[str, Any]:
    """The file's facts (config()) from its header alone, no tensor dequantized. Reading the header
    parses every field, the tokenizer's ~100,000 strings too (seconds of CPU), so the facts are read
    once per file and version: kept in this process and, for other processes (a school's workers, a
    restart), as a small JSON file beside where the converted folder goes. One thread reads a file's
    header while the others asking for it wait for its answer: a server just started, its model not
    converted yet, is asked for it by every page that opens (GET /api/models), and each reading its own
    copy kept the server's cores busy for minutes."""
    if not path.is_file():
        raise ModelError(f"GGUF file {path} does not exist")
    where = cached_dir(path)
    with _headers_lock:
        if where in _headers:
            return dict(_headers[where])
        reading = _reading.setdefault(where, threading.Lock())
    with reading:
        with _headers_lock:
            if where in _headers:  # read by the thread this one waited for
                return dict(_headers[where])
        saved = where.with_name(where.name + ".header.json")
        try:
            cfg: dict[str, Any] = json.loads(saved.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cfg = config(_reader(path), path)
            with contextlib.suppress(OSError):  # a read-only cache still answers, from this process's copy
                saved.parent.mkdir(parents=True, exist_ok=True)
                tmp = saved.with_name(saved.name + f".tmp{os.getpid()}-{threading.get_ident()}")
                tmp.write_text(json.dumps(cfg), encoding="utf-8")
                tmp.replace(saved)  # atomic: a reader sees the whole file or none
        with _headers_lock:
            _headers[where] = cfg
    return dict(cfg)


_headers: dict[Path, dict[str, Any]] = {}  # cached_dir(path) → header_config(path)
_reading: dict[Path, threading.Lock] = {}  # cached_dir(path) → held by the thread reading its header
_headers_lock = threading.Lock()


def folder(path: Path) -> Path:
    """The converted folder of a GGUF file: made now (seconds) unless made before."""
    if not path.is_file():
        raise ModelError(f"GGUF file {path} does not exist")
    out = cached_dir(path)
    if _done(out):
        return out
    with _converting:  # two threads asking at once (the model list's and a sentence's): one converts
        if _done(out):
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.with_name(out.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two processes (e.g. test workers, a school's): the second waits
            return out if _done(out) else _convert(path, out)


_converting = threading.Lock()


def _convert(path: Path, out: Path) -> Path:
    from app.model.families.llama.config import fields

    reader = _reader(path)
    cfg = config(reader, path)
    spec = ModelSpec(model_name(path), out, **fields(path.name, cfg))
    tokenizer = tokenizer_json(lambda key: _field(reader, key), str(path))
    tmp = out.with_name(out.name + f".tmp{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / JOINED_DIR).mkdir(parents=True)
    try:
        _write_joined(reader, spec, path, tmp / JOINED_DIR)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / "tokenizer.json").write_text(tokenizer, encoding="utf-8")
    template = _field(reader, "tokenizer.chat_template")
    (tmp / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}), encoding="utf-8")
    (tmp / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    try:
        tmp.rename(out)  # atomic: another process converting the same file at once keeps its own
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _write_joined(reader: Any, spec: ModelSpec, path: Path, where: Path) -> None:
    """Every weight the forward multiplies by, as joined/ holds them (stacked_shapes), written a
    layer's matrix at a time: each .npy file's header, then its rows in order."""
    from gguf.quants import dequantize

    by_name = {t.name: t for t in reader.tensors}

    def tensor(name: str, shape: tuple[int, ...]) -> np.ndarray:
        t = by_name.get(name)
        if t is None:
            raise ModelError(f"{path} lacks the tensor {name}")
        try:
            w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)  # (out, in) or (C,)
        except NotImplementedError as e:
            raise ModelError(f"{name}: quantization {t.tensor_type.name} cannot be read: {e}") from None
        if w.shape != shape:
            raise ModelError(f"{path}: {name} has shape {list(w.shape)}, not the {list(shape)} its facts imply")
        if not np.isfinite(w).all():
            bad = int(w.size - np.count_nonzero(np.isfinite(w)))
            raise ModelError(f"{name} holds {bad:,} values that are NaN or infinite: the file is damaged")
        return w

    shapes = stacked_shapes(spec)
    theirs = {ours: theirs for theirs, ours in _TOP_NAMES.items()}
    one = names.parts(spec)
    for kind, shape in shapes.items():
        with open(where / f"{kind}.npy", "wb") as f:
            _header(f, shape)
            if kind in theirs:  # embeddings, final norm, lm_head
                _rows(f, tensor(theirs[kind] + ".weight", shape))
                continue
            part = kind.removeprefix(stacked_name(""))
            for i in range(spec.layers):
                pieces = []
                for piece in names.JOINED.get(part, (part,)):
                    w = tensor(f"blk.{i}.{_GGUF_NAME[piece]}", one[piece])
                    if piece in (names.Q, names.K):
                        w = unpermute(w, spec.heads if piece == names.Q else spec.kv_heads)
                    pieces.append(w)
                w = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]  # the layer's (out, in), or (C,)
                _rows(f, w.T if w.ndim == 2 else w)  # a matrix as its transpose (in, out): see stacked_shapes


def _header(f: BinaryIO, shape: tuple[int, ...]) -> None:
    np.lib.format.write_array_header_1_0(f, {"descr": np.dtype(np.float32).str, "fortran_order": False,
                                             "shape": shape})  # fmt: skip


def _rows(f: BinaryIO, a: np.ndarray) -> None:
    f.write(np.ascontiguousarray(a, dtype=np.float32).data)  # its memory as it is: no copy
