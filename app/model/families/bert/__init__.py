"""BERT-family encoders (all-MiniLM-L6-v2): post-LayerNorm layers, every token sees every token."""

from app.model.families.base import Family
from app.model.families.bert import config
from app.model.families.bert.layer import BertLayer, column_major

FAMILY = Family("bert", "bert", config.fields, config.tensors, config.WORDS, BertLayer, column_major)
