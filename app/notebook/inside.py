"""Looking inside a model in a notebook: attention through all layers, and every layer's guess.

    from attention3d import rollout, lens, show
    rollout("The animal didn't cross the street because it was too tired.")   # the layers stacked, the paths of "it"
    rollout(…, method="flow")                   # maximum flow instead of rollout (short sentences)
    lens("The capital of France is")            # SmolLM2's guess after every layer, as a column of bars
    show(sentence=…, layer=5, head=0, ablate=[(3, 5)])   # a head seen with other heads switched off

The numbers are the API's, computed in the kernel by the same functions (app.model.inside): a view's
`result` is the JSON answer of POST /api/rollout or POST /api/lens for the same request. The scene is
pythreejs, as the page draws it (static/js/scene/layerstack.js, barcolumn.js): a row of tokens per layer,
the input at the bottom; each token a point as dark as the share of the focus passing through it, the
paths down from the focus as lines; the lens a bar per layer, as long as its top guess's chance.
"""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from app.errors import InputError
from app.model import inside, registry
from app.model.rollout import METHODS
from app.notebook.markup import SCENE_BACKGROUND, heat_rgb, hex_rgb
from app.notebook.numbers import MAX_SCENE_TOKENS, as_json, backend
from app.notebook.scene import Label

WIDTH, HEIGHT = 640, 420


def _handle(model: str | None, default: str | None = None) -> Any:
    import os

    try:
        return registry.handle(model or default, os.environ.get("ATTENTION_MODEL") or None)
    except InputError as e:
        raise InputError("model", e.message) from None


def _colour(t: float) -> tuple[float, float, float]:
    r, g, b = heat_rgb(max(0.0, min(1.0, t)))
    return (r / 255, g / 255, b / 255)


def _renderer(scene: Any, camera: Any, width: int, height: int) -> Any:
    controls = three.OrbitControls(controlling=camera)
    renderer = three.Renderer(
        scene=scene, camera=camera, controls=[controls], width=width, height=height, antialias=True
    )
    renderer.layout.width, renderer.layout.height = f"{width}px", f"{height}px"
    return renderer


def _scene() -> Any:
    scene = three.Scene(background=SCENE_BACKGROUND)
    scene.add(three.AmbientLight(color="#ffffff", intensity=0.9))
    return scene


class LayerStackScene:
    """The layers stacked (row l: after layer l, row 0 the input), a point per token, the focus's paths as lines."""

    def __init__(self, result: dict[str, Any]) -> None:
        tokens: list[str] = result["tokens"]
        layers = len(result["attention"])  # "layers" is null for a flow answer without tables
        n = len(tokens)
        self.dx, self.dy = min(0.9, 13 / n), min(0.8, 11 / layers)
        dx, dy = self.dx, self.dy

        def x(k: int) -> float:
            return (k - (n - 1) / 2) * dx

        def y(row: int) -> float:
            return row * dy

        through = np.array(result["focus_paths"]["through"]) if result.get("focus_paths") else np.zeros((layers + 1, n))
        peak = max(1e-9, float(through[:layers].max()))
        points = np.array([(x(k), y(row), 0.0) for row in range(layers + 1) for k in range(n)], dtype=np.float32)
        colours = np.array(
            [_colour(1.0 if row == layers and k == result.get("focus") else through[row, k] / peak)
             for row in range(layers + 1) for k in range(n)], dtype=np.float32,
        )  # fmt: skip
        geometry = three.BufferGeometry(
            attributes={"position": three.BufferAttribute(points), "color": three.BufferAttribute(colours)}
        )
        self.points = three.Points(geometry, three.PointsMaterial(vertexColors="VertexColors", size=0.22))
        scene = _scene()
        scene.add(self.points)
        edges = result.get("focus_paths", {}).get("edges", []) if result.get("focus_paths") else []
        self.edges = edges
        if edges:
            ends = np.array(
                [[(x(a), y(layer), 0.0), (x(b), y(layer - 1), 0.0)] for layer, a, b, _ in edges], dtype=np.float32
            )
            shares = np.array([[_colour(1 - min(1.0, s * 4))] * 2 for *_, s in edges], dtype=np.float32)
            lines = three.BufferGeometry(
                attributes={
                    "position": three.BufferAttribute(ends.reshape(-1, 3)),
                    "color": three.BufferAttribute(shares.reshape(-1, 3)),
                }
            )
            self.lines = three.LineSegments(lines, three.LineBasicMaterial(vertexColors="VertexColors"))
            scene.add(self.lines)
        self.labels = []
        focus = result.get("focus")
        if focus is not None:
            self.labels.append(
                Label(tokens[focus].strip() or "␣", "#111111", 0.36, position=(x(focus), y(layers) + 0.45, 0))
            )
        bottom = through[0] if focus is not None else np.ones(n)
        for k in np.argsort(-bottom, kind="stable")[: min(n, 6)]:
            self.labels.append(Label(tokens[k].strip() or "␣", "#333333", 0.3, position=(x(int(k)), -0.45, 0)))
        for label in self.labels:
            scene.add(label.sprite)
        width, height = n * self.dx + 3, layers * self.dy + 2
        camera = three.PerspectiveCamera(fov=30, aspect=WIDTH / HEIGHT, near=0.1, far=500, up=(0, 1, 0))
        distance = max(width / (WIDTH / HEIGHT), height) / (2 * np.tan(np.radians(15))) * 1.05
        camera.position = (0.0, y(layers) / 2, float(distance))
        camera.lookAt((0.0, y(layers) / 2, 0.0))
        self.scene, self.camera = scene, camera
        self.renderer = _renderer(scene, camera, WIDTH, HEIGHT)


class RolloutView(widgets.VBox):  # type: ignore[misc]
    """Rollout (or flow) of a sentence: `result` is POST /api/rollout's answer; `scene` the layer stack."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.scene = LayerStackScene(result)
        tokens = result["tokens"]
        focus = result.get("focus")
        title = f"<b>{escape(result['model'])}</b> · {escape(result['method'])} · {len(tokens)} tokens"
        if focus is not None:
            title += f" · following {escape(tokens[focus])!r}"
        rows = ""
        if focus is not None:
            share = result["focus_paths"]["through"][0]
            for k in np.argsort(-np.array(share), kind="stable")[:10]:
                rows += f"<tr><th>{escape(tokens[k])}</th><td>{share[k]:.4f}</td></tr>"
        table = widgets.HTML(
            f"<table><caption>What the focus takes from each input token, largest first</caption>{rows}</table>"
            if rows
            else ""
        )
        super().__init__([widgets.HTML(title), widgets.HBox([self.scene.renderer, table])])
        self.add_class("attention3d-inside")


def rollout(
    sentence: str,
    *,
    model: str | None = None,
    method: str = "rollout",
    focus: int | str | None = None,
    mask: str | None = None,
) -> RolloutView:
    """Attention through all layers (Abnar & Zuidema 2020) of a sentence, drawn as the layers stacked.

    method  "rollout" (Â_L ··· Â_1, Â = 0.5·A + 0.5·I) or "flow" (maximum flow; past a model's
            flow_table_tokens the answer's "layers" is None and only the focus's paths are drawn)
    focus   the token whose paths to draw: its index or the token itself (default: the last)
    mask    "full" or "causal" (default: the model's own)
    Bad input raises a ValueError (InputError) naming the field, with the API's message.
    """
    if method not in METHODS:
        raise InputError("method", f"method must be one of {list(METHODS)}, not {method!r}")
    if mask not in (None, "full", "causal"):
        raise InputError("mask", f"mask must be 'full' or 'causal', not {mask!r}")
    handle = _handle(model)
    # the tokens (and the sentence's limits): rollout's, a millisecond, where flow would follow a default focus
    probe = inside.attention_through_layers(handle, sentence, "rollout", None, mask, mask is not None, backend())  # type: ignore[arg-type]
    tokens = probe["tokens"]
    if len(tokens) > MAX_SCENE_TOKENS:
        raise InputError(
            "sentence", f"sentence is {len(tokens)} tokens; the notebook view draws at most {MAX_SCENE_TOKENS}"
        )
    index = len(tokens) - 1 if focus is None else _index(focus, tokens)
    answer = inside.attention_through_layers(handle, sentence, method, index, mask, mask is not None, backend())  # type: ignore[arg-type]
    return RolloutView(as_json(answer, {}))


def _index(focus: int | str, tokens: list[str]) -> int:
    if isinstance(focus, str):
        stripped = [t.strip() for t in tokens]
        if focus.strip() not in stripped:
            raise InputError("focus", f"focus {focus!r} is not one of the tokens {tokens}")
        return stripped.index(focus.strip())
    if isinstance(focus, bool) or not isinstance(focus, int) or not 0 <= focus < len(tokens):
        raise InputError("focus", f"focus must be a token's index 0 … {len(tokens) - 1} or the token, not {focus!r}")
    return focus


class LensView(widgets.VBox):  # type: ignore[misc]
    """Every layer's guess: `result` is POST /api/lens's answer; `bars` one box per layer, bottom up."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        rows = result["layers"]
        dy = 0.4
        scene = _scene()
        self.bars = []
        self.labels = []
        for i, r in enumerate(rows):
            p = float(r["top"][0]["p"])
            length = max(0.02, 3 * p)
            box = three.Mesh(
                three.BoxGeometry(width=1, height=0.3, depth=0.25),
                three.MeshBasicMaterial(color=hex_rgb(heat_rgb(p))),
                position=(length / 2, i * dy, 0),
                scale=(length, 1, 1),
            )
            self.bars.append(box)
            scene.add(box)
            marked = r["layer"] == result["first_top"]
            text = f"{'emb.' if r['layer'] < 0 else r['layer']}: {r['top'][0]['token'].strip() or '␣'}"
            if marked or i == 0 or r["top"][0]["id"] != rows[i - 1]["top"][0]["id"]:
                label = Label(text, "#b03a0a" if marked else "#333333", 0.28)
                label.sprite.center = (0, 0.5)
                label.sprite.position = (3.3, i * dy, 0)
                self.labels.append(label)
                scene.add(label.sprite)
        height = len(rows) * dy
        camera = three.PerspectiveCamera(fov=30, aspect=WIDTH / HEIGHT, near=0.1, far=500, up=(0, 1, 0))
        distance = (height + 1.5) / (2 * np.tan(np.radians(15)))
        camera.position = (2.5, height / 2, float(distance))
        camera.lookAt((2.5, height / 2, 0.0))
        self.scene, self.camera = scene, camera
        self.renderer = _renderer(scene, camera, WIDTH, HEIGHT)
        answer = result["answer"]["token"]
        title = (
            f"<b>{escape(result['model'])}</b> · the next token after {escape(''.join(result['tokens']))!r}: "
            f"{escape(answer)!r}, first on top after layer {result['first_top']}"
        )
        super().__init__([widgets.HTML(title), self.renderer])
        self.add_class("attention3d-lens")


def lens(prompt: str, *, model: str | None = None, position: int | None = None) -> LensView:
    """Every layer's guess for the next token (the logit lens) of a decoder (default SmolLM2-135M)."""
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise InputError("position", f"position must be a token's index ≥ 0, not {position!r}")
    answer = inside.every_layers_guess(_handle(model, registry.DECODER_ID), prompt, position, backend())
    return LensView(as_json(answer, {}))
