"""Attention, in 3D, in a notebook: `from attention3d import show; show()`.

The code lives in app.notebook (see its docstring); this package is the name a notebook user
can guess. Needs the notebook extra: pip install 'attention-3d[notebook]'.
"""

from app.notebook import AttentionView, LensView, RolloutView, WriteView, lens, rollout, show, write

__all__ = ["AttentionView", "LensView", "RolloutView", "WriteView", "lens", "rollout", "show", "write"]
