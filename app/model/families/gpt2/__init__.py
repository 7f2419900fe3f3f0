"""GPT-2-family decoders: pre-LayerNorm blocks, causal by nature."""

from app.model.families.base import Family
from app.model.families.gpt2 import config
from app.model.families.gpt2.layer import Gpt2Layer

FAMILY = Family("gpt2", "gpt2", config.fields, config.tensors, config.WORDS, Gpt2Layer)
