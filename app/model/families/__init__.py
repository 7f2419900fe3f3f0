"""The model families this server runs, each a package owning its config fields, tensor names and
shapes, tokenizer rules and its one layer (app.model.families.base: the protocol they share).

  bert    BERT-family encoders (all-MiniLM-L6-v2): every token sees every token
  gpt2    GPT-2-family decoders: causal by nature
  llama   Llama-family decoders (SmolLM2-135M): causal, RoPE, grouped-query heads; GGUF files too
"""

from __future__ import annotations

from collections.abc import Mapping

from app.model.families import bert, gpt2, llama
from app.model.families.base import Family, Kind

FAMILIES: Mapping[Kind, Family] = {f.kind: f for f in (bert.FAMILY, gpt2.FAMILY, llama.FAMILY)}
BY_MODEL_TYPE: Mapping[str, Family] = {f.model_type: f for f in FAMILIES.values()}
