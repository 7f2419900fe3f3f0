"""Llama-family decoders (SmolLM2): pre-RMSNorm blocks, rotary positions, grouped-query heads,
SwiGLU; from a safetensors folder or a llama.cpp GGUF file (gguf.py, tokenizer.py)."""

from app.model.families.base import Family
from app.model.families.llama import config
from app.model.families.llama.layer import LlamaLayer
from app.model.families.llama.weights import fuse, read_joined, stacked_shapes

FAMILY = Family(
    "llama", "llama", config.fields, config.tensors, config.EMBED, LlamaLayer, fuse, stacked_shapes, read_joined
)
