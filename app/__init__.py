"""Attention, in 3D: every stage of transformer self-attention, computed and drawn."""

__version__ = "0.1.0"
