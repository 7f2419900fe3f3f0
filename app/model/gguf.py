"""A Llama-family GGUF file (llama.cpp's format) as a Hugging Face model folder, made once and cached.

References:
  llama.cpp, docs of the GGUF format (ggml/docs/gguf.md) and convert_hf_to_gguf.py, whose
  LlamaModel.permute() reorders the rows of attn_q and attn_k within each head for llama.cpp's
  interleaved rotary embedding; `unpermute` below is its inverse, as transformers'
  modeling_gguf_pytorch_utils.LlamaTensorProcessor undoes it.
  The `gguf` package (the llama.cpp project's reader): GGUFReader, gguf.quants.dequantize
  (Q4_1, Q8_0, … blocks back to float32).

A GGUF file holds the model's facts (llama.block_count, …), the tokenizer (tokens, merges, token
types) and the quantized tensors. `folder(path)` turns it into what a Hugging Face Llama folder
holds — config.json, model.safetensors (float32, the tensors under transformers' names, q and k
rows back in transformers' order), tokenizer.json, tokenizer_config.json (the chat template) —
in the data folder (<data>/models/<name>-<hash>/), once: reading and dequantizing take a few
seconds. Beside them, joined/ holds the same weights as the NumPy forward uses them (each layer's
q/k/v and gate/up matrices joined, every kind stacked over the layers, app.model.llama_weights):
one .npy file per kind, memory-mapped at the next start (mapped()), so a start reads nothing
until a forward pass touches it and joins nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from app.errors import ModelError

CACHE_ENV = "ATTENTION_MODEL_CACHE"  # where converted models go (default <data folder>/models)
FORMAT = 2  # bumped when what a converted folder holds changes: older folders are made again
JOINED_DIR = "joined"  # the forward's weights, joined and stacked over the layers: one .npy per kind (mapped())

# GGUF tensor name (after "blk.{i}.") → transformers' LlamaForCausalLM name (after "model.layers.{i}.")
_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """transformers' q/k rows → llama.cpp's: within each head, rows (0 … d/2−1, d/2 … d−1) interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k rows → transformers' (the inverse of permute): rotary pairs (i, i + d/2)."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


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
    if _field(reader, "llama.rope.scaling.type", "none") not in ("none", None) or "rope_freqs.weight" in _names(reader):
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
        "tie_word_embeddings": "output.weight" not in _names(reader),
        "attention_bias": False,
        "mlp_bias": False,
        "torch_dtype": "float32",
    }
    for key in ("bos_token_id", "eos_token_id"):
        value = _field(reader, f"tokenizer.ggml.{key}")
        if value is not None:
            out[key] = int(value)
    return out


def _names(reader: Any) -> set[str]:
    return {t.name for t in reader.tensors}


def _hf_name(name: str) -> str | None:
    """transformers' name of a GGUF tensor (None: not one the forward pass reads)."""
    stem, _, kind = name.rpartition(".")
    if stem.startswith("blk."):
        _, layer, part = stem.split(".", 2)
        return f"model.layers.{layer}.{_LAYER_NAMES[part]}.{kind}" if part in _LAYER_NAMES else None
    return f"{_TOP_NAMES[stem]}.{kind}" if stem in _TOP_NAMES else None


def tensors(reader: Any, cfg: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every tensor dequantized to float32 under transformers' names, q and k rows unpermuted."""
    from gguf.quants import dequantize

    out: dict[str, np.ndarray] = {}
    for t in reader.tensors:
        name = _hf_name(t.name)
        if name is None:
            continue
        try:
            w = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32)  # (out, in) or (C,)
        except NotImplementedError as e:
            raise ModelError(f"{t.name}: quantization {t.tensor_type.name} cannot be read: {e}") from None
        if name.endswith("q_proj.weight"):
            w = unpermute(w, cfg["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            w = unpermute(w, cfg["num_key_value_heads"])
        if not np.isfinite(w).all():
            bad = int(w.size - np.count_nonzero(np.isfinite(w)))
            raise ModelError(f"{t.name} holds {bad:,} values that are NaN or infinite: the file is damaged")
        out[name] = np.ascontiguousarray(w)
    return out


def tokenizer_json(reader: Any) -> str:
    """The byte-level BPE tokenizer of the file's vocabulary and merges, as a tokenizer.json.

    Digits are split one by one before the GPT-2 byte-level split (SmolLM2's own tokenizer.json
    does so); the tokens the file marks as control (type 3) are special tokens, kept whole.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    tokens = [str(t) for t in _field(reader, "tokenizer.ggml.tokens")]
    merges = [tuple(str(m).split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges", [])]
    types = list(_field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=False))  # type: ignore[arg-type]
    digits = _field(reader, "tokenizer.ggml.pre") in ("smollm", "starcoder", "refact")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level]) if digits else byte_level
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, kind in zip(tokens, types, strict=True) if kind == 3]
    )
    return str(tok.to_str())


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
    """Where the converted folder of the GGUF file `path` lives (named by its path, size and time)."""
    st = path.stat()
    key = hashlib.sha256(f"{FORMAT}\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return _cache_root() / f"{path.stem}-{key}"


def converted(path: Path) -> bool:
    """Whether the GGUF file `path` has its converted folder already (folder() is then quick)."""
    return path.is_file() and (cached_dir(path) / "model.safetensors").is_file()


def _save_joined(weights: dict[str, np.ndarray], cfg: dict[str, Any], where: Path) -> None:
    """The forward's weights (app.model.llama_weights.stacked) as one .npy file per kind in `where`."""
    from app.model import llama_weights

    heads = cfg["num_attention_heads"]
    sizes = SimpleNamespace(layers=cfg["num_hidden_layers"], heads=heads, kv_heads=cfg["num_key_value_heads"],
                            head_size=cfg["head_dim"], intermediate=cfg["intermediate_size"])  # fmt: skip
    plain = {n.removeprefix("model."): w for n, w in weights.items()}  # the names bert.py/llama.py use
    where.mkdir()
    for n, a in llama_weights.stacked(plain, sizes).items():
        np.save(where / f"{n}.npy", a)


def mapped(folder: Path, spec: Any) -> dict[str, np.ndarray] | None:
    """The forward's weights of a converted folder, memory-mapped read-only from joined/ (None: the
    folder has none): nothing is read until a forward pass touches it. Their values were checked
    finite when the folder was made."""
    from app.model import llama_weights

    where = folder / JOINED_DIR
    if not where.is_dir():
        return None
    stacks = {f.name.removesuffix(".npy"): np.load(f, mmap_mode="r") for f in sorted(where.glob("*.npy"))}
    return llama_weights.unstacked(stacks, spec)


def header_config(path: Path) -> dict[str, Any]:
    """The file's facts (config()) from its header alone, no tensor dequantized. Reading the header
    parses every field, the tokenizer's ~100,000 strings too (seconds of CPU), so the facts are read
    once per file and version: kept in this process and, for other processes (a school's workers, a
    restart), as a small JSON file beside where the converted folder goes."""
    if not path.is_file():
        raise ModelError(f"GGUF file {path} does not exist")
    where = cached_dir(path)
    with _headers_lock:
        if where in _headers:
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
_headers_lock = threading.Lock()


def folder(path: Path) -> Path:
    """The Hugging Face folder of a GGUF file: made now (a few seconds) unless made before."""
    if not path.is_file():
        raise ModelError(f"GGUF file {path} does not exist")
    out = cached_dir(path)
    if (out / "model.safetensors").is_file():
        return out
    with _converting:  # two threads asking at once (the model list's and a sentence's): one converts
        if (out / "model.safetensors").is_file():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.with_name(out.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two processes (e.g. test workers, a school's): the second waits
            return out if (out / "model.safetensors").is_file() else _convert(path, out)


_converting = threading.Lock()


def _convert(path: Path, out: Path) -> Path:
    from safetensors.numpy import save_file

    reader = _reader(path)
    cfg = config(reader, path)
    weights = tensors(reader, cfg)
    template = _field(reader, "tokenizer.chat_template")
    tmp = out.with_name(out.name + f".tmp{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    (tmp / "tokenizer.json").write_text(tokenizer_json(reader), encoding="utf-8")
    (tmp / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}), encoding="utf-8")
    save_file(weights, str(tmp / "model.safetensors"), metadata={"source": path.name, "format": "pt"})
    _save_joined(weights, cfg, tmp / JOINED_DIR)
    try:
        tmp.rename(out)  # atomic: another process converting the same file at once keeps its own
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
