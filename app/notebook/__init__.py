"""The attention of an example, hand-set Q/K/V or a sentence, drawn in 3D inside a notebook.

    pip install 'attention-3d[notebook]'      # pythreejs 2.4.2 and ipywidgets 8.1.9
    from attention3d import show               # the same function as app.notebook.show
    show()                                     # the worked example "the cat ate its fish"

The numbers come from app.attention and app.model in the kernel (no server): app.notebook.numbers.
The drawing is pythreejs (app.notebook.scene), the controls ipywidgets (app.notebook.view).
"""

from __future__ import annotations

try:
    from app.notebook.inside import LensView, RolloutView, lens, rollout
    from app.notebook.view import AttentionView, show
    from app.notebook.write import WriteView, write
except ModuleNotFoundError as e:  # pragma: no cover - the extra is not installed
    if e.name not in ("ipywidgets", "pythreejs"):
        raise
    raise ModuleNotFoundError(
        f"the notebook view needs {e.name}: pip install 'attention-3d[notebook]'", name=e.name
    ) from None

__all__ = ["AttentionView", "LensView", "RolloutView", "WriteView", "lens", "rollout", "show", "write"]
