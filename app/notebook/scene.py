"""The notebook view's 3-D scene, drawn with pythreejs in the scene language of the page.

static/js/scene/* is the reference: queries stand in the front row, keys behind them,
values behind the keys (layout.js); each vector is an arrow in the vertical plane of its row
(x right, y up: its first two coordinates, or a PCA projection when d > 2, as projection.js);
q and k share one scale, v and z another; links run from the focused query to every key, with
thickness and colour by the current step (links.js); z is a vermillion arrow in front of the
queries at the mix step (output.js). The objects are made once per view and then only moved,
recoloured or hidden, so a control change sends a few attribute updates to the browser.

tests/notebook/test_parity.py runs the page's own modules in Node on the same answers and holds
this port to them: rows, arrows, each link's radius, colour and label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pythreejs as three

from app.notebook.markup import COLOURS, SCENE_BACKGROUND, fixed3, heat_rgb, hex_rgb, row_levels, vector
from app.notebook.numbers import Step

SPACING = 2.9
ROW_GAP = 3.4
VALUE_BEHIND = 1.6
OUTPUT_AHEAD = 2.8
ARROW_MAX = 2.1
PALE_Q = "#f0c870"  # the queries that are not focused
BASE = "#b8b8b0"  # token markers
LABEL_HEIGHT = 0.42  # a label's letter height, in scene units
FOV = 30.0


@dataclass(frozen=True)
class Layout:
    """Where things go (static/js/scene/layout.js)."""

    n: int
    xs: list[float]
    width: float
    z_query: float
    z_key: float
    z_value: float
    z_output: float

    @staticmethod
    def of(n: int) -> Layout:
        xs = [(i - (n - 1) / 2) * SPACING for i in range(n)]
        width = (n - 1) * SPACING
        gap = ROW_GAP * min(2.75, max(1.0, width / (4 * SPACING)))
        return Layout(n, xs, width, gap, -gap, -gap - VALUE_BEHIND, gap + OUTPUT_AHEAD)


def pca_axes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows' mean and first two principal axes (d, 2), each axis's largest entry positive."""
    mean = rows.mean(axis=0)  # (d,)
    centred = rows - mean  # (n, d)
    cov = centred.T @ centred / max(1, len(rows) - 1)  # (d, d)
    values, vectors = np.linalg.eigh(cov)
    axes = vectors[:, np.argsort(values)[::-1][:2]]  # (d, 2)
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), [0, 1]])
    return mean, axes * np.where(signs == 0, 1, signs)


def drawing(result: dict[str, Any]) -> dict[str, np.ndarray]:
    """The 2-D drawing of an answer: q and k by one PCA, v and z by another; d ≤ 2 as they are."""
    q, k, v, z = (np.asarray(result[name], dtype=np.float64) for name in ("q", "k", "v", "output"))
    if q.shape[1] > 2:
        mean, axes = pca_axes(np.vstack([q, k]))
        q, k = (q - mean) @ axes, (k - mean) @ axes  # (n, 2)
    if v.shape[1] > 2:
        mean, axes = pca_axes(v)
        v, z = (v - mean) @ axes, (z - mean) @ axes  # z where its blend of the v lands
    return {"q": _pad2(q), "k": _pad2(k), "v": _pad2(v), "output": _pad2(z)}


def _pad2(a: np.ndarray) -> np.ndarray:
    """The first two coordinates of each row (a 1-D vector gets y = 0)."""
    return np.pad(a, ((0, 0), (0, max(0, 2 - a.shape[1]))))[:, :2]


def _planar(row: np.ndarray, scale: float) -> np.ndarray:
    """A drawn 2-D vector as a 3-D direction in the XY plane of its row."""
    return np.array([row[0] * scale, row[1] * scale, 0.0])


def _linear(srgb: np.ndarray) -> np.ndarray:
    """sRGB 0…1 to linear light (three.js's SRGBToLinear)."""
    return np.where(srgb < 0.04045, srgb * 0.0773993808, (srgb * 0.9478672986 + 0.0521327014) ** 2.4)


def _srgb(linear: np.ndarray) -> np.ndarray:
    """Linear light to sRGB 0…1 (three.js's LinearToSRGB)."""
    return np.where(linear < 0.0031308, linear * 12.92, 1.055 * np.power(linear, 0.41666) - 0.055)


def link_colour(level: float) -> str:
    """A link's colour (links.js): the heat colour of its level, faded toward the background by
    (1 − level) · 0.55 — mixed in linear light, as three.js mixes colours, then written as sRGB."""
    heat = _linear(np.array(heat_rgb(level), dtype=np.float64) / 255)
    background = _linear(np.array([int(SCENE_BACKGROUND[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.float64) / 255)
    mixed = _srgb(heat + (background - heat) * (1 - level) * 0.55)
    r, g, b = (float(c) for c in np.clip(np.round(mixed * 255), 0, 255))
    return hex_rgb((r, g, b))


def _text_width(text: str) -> float:
    """The width of `text` in Arial (Liberation Sans) ems, as the browser's canvas will measure it."""
    narrow, wide = set("ijlt.,:;|!'[]()f r"), set("mwMW@")
    return sum(0.3 if c in narrow else 0.85 if c in wide else 0.67 if c.isupper() else 0.56 for c in text) + 0.1


class Label:
    """A line of text drawn into the scene (a sprite with a canvas texture: text, never HTML)."""

    def __init__(self, text: str, colour: str, height: float = LABEL_HEIGHT, position: tuple[float, ...] = (0, 0, 0)):
        self.height = height
        self.texture = three.TextTexture(
            string=text, color=colour, size=64, squareTexture=False, minFilter="LinearFilter", generateMipmaps=False
        )
        material = three.SpriteMaterial(map=self.texture, transparent=True, depthWrite=False)
        self.sprite = three.Sprite(material=material, position=position)
        self.set(text)

    def set(self, text: str, colour: str | None = None) -> None:
        self.texture.string = text
        if colour is not None:
            self.texture.color = colour
        aspect = _text_width(text) * 64 / 66
        self.sprite.scale = (self.height * aspect, self.height, 1)


def _rotation_from_y(direction: np.ndarray) -> tuple[float, float, float, float]:
    """The quaternion (x, y, z, w) that turns +Y onto `direction` (a unit vector)."""
    y = np.array([0.0, 1.0, 0.0])
    dot = float(y @ direction)
    if dot < -0.999999:
        return (1.0, 0.0, 0.0, 0.0)  # half a turn about x
    axis = np.cross(y, direction)
    quat = np.array([axis[0], axis[1], axis[2], 1 + dot])
    return tuple(float(x) for x in quat / np.linalg.norm(quat))  # type: ignore[return-value]


class Rod:
    """A cylinder (or cone) stretched from a point along a vector: a shaft, a head or a link."""

    def __init__(self, geometry: Any, material: Any) -> None:
        self.mesh = three.Mesh(geometry, material)
        self.radius = 0.0
        self.length = 0.0

    def place(self, start: np.ndarray, vec: np.ndarray, radius: float) -> None:
        length = float(np.linalg.norm(vec))
        self.radius, self.length = radius, length
        if length < 1e-6 or radius <= 0:
            self.mesh.visible = False
            return
        self.mesh.position = tuple(float(x) for x in start + vec / 2)  # the geometry is centred on its middle
        self.mesh.quaternion = _rotation_from_y(vec / length)
        self.mesh.scale = (radius, length, radius)
        self.mesh.visible = True


class Arrow:
    """A shaft and a head (static/js/scene/arrowset.js's proportions)."""

    def __init__(self, parts: Parts, colour: str, shaft: float = 0.07, head: float = 0.19, head_length: float = 0.36):
        self.parts = parts
        material = parts.material(colour)
        self.shaft = Rod(parts.cylinder, material)
        self.head = Rod(parts.cone, material)
        self.dims = (shaft, head, head_length)
        self.vec = np.zeros(3)

    def set(self, origin: np.ndarray, vec: np.ndarray, colour: str | None = None) -> None:
        shaft, head, head_length = self.dims
        self.vec = vec
        if colour is not None:
            material = self.parts.material(colour)
            self.shaft.mesh.material = material
            self.head.mesh.material = material
        length = float(np.linalg.norm(vec))
        if length < 1e-4:
            self.shaft.mesh.visible = self.head.mesh.visible = False
            return
        hl = min(head_length, length * 0.5)
        thin = 0.6 + 0.4 * min(1.0, length / 0.6)  # short arrows a little thinner
        unit = vec / length
        self.shaft.place(origin, unit * (length - hl), shaft * thin)
        self.head.place(origin + unit * (length - hl), unit * hl, head * thin)

    @property
    def meshes(self) -> list[Any]:
        return [self.shaft.mesh, self.head.mesh]


class Parts:
    """Geometries and materials shared by many meshes (one widget each, not one per mesh)."""

    def __init__(self) -> None:
        self.cylinder = three.CylinderGeometry(radiusTop=1, radiusBottom=1, height=1, radialSegments=16)
        self.cone = three.ConeGeometry(radius=1, height=1, radialSegments=20)
        self.sphere = three.SphereGeometry(radius=1, widthSegments=24, heightSegments=12)
        self._materials: dict[str, Any] = {}

    def material(self, colour: str) -> Any:
        if colour not in self._materials:
            self._materials[colour] = three.MeshStandardMaterial(color=colour, roughness=0.5, metalness=0.0)
        return self._materials[colour]


class AttentionScene:
    """Every object of the view for one set of tokens; update() shows a step, a mask and a focus."""

    def __init__(self, tokens: list[str], width: int = 600, height: int = 420) -> None:
        self.tokens = tokens
        self.lay = lay = Layout.of(len(tokens))
        parts = self.parts = Parts()
        self.scene = three.Scene(background=SCENE_BACKGROUND)
        self.scene.add(three.AmbientLight(color="#ffffff", intensity=0.55))
        self.scene.add(three.HemisphereLight(color="#ffffff", groundColor="#8a8a80", intensity=0.7))
        # pythreejs's DirectionalLight logs "Error setting state: t.on is not a function"; the light works
        self.scene.add(three.DirectionalLight(color="#ffffff", intensity=0.6, position=(4, 10, 8)))

        plane_width = lay.width + 3.6
        big = min(1.6, math.sqrt(max(1.0, lay.width / (4 * SPACING))))  # a long row is seen from afar: larger text
        for z, colour, caption in (
            (lay.z_query, COLOURS["q"], "queries q"),
            (lay.z_key, COLOURS["k"], "keys k"),
            (lay.z_value, COLOURS["v"], "values v"),
        ):
            material = three.MeshBasicMaterial(
                color=colour, transparent=True, opacity=0.07, depthWrite=False, side="DoubleSide"
            )
            self.scene.add(
                three.Mesh(three.PlaneGeometry(width=plane_width, height=3.6), material, position=(0.6, 0, z))
            )
            label = Label(caption, "#444444", 0.36 * big)
            label.sprite.center = (0, 1)
            label.sprite.position = (-plane_width / 2 + 0.6, 1.6, z)
            self.scene.add(label.sprite)

        self.query_markers = [
            three.Mesh(parts.sphere, parts.material(BASE), position=(x, 0, lay.z_query)) for x in lay.xs
        ]
        self.key_markers = [
            three.Mesh(parts.sphere, parts.material(BASE), position=(x, 0, lay.z_key), scale=(0.32,) * 3)
            for x in lay.xs
        ]
        self.value_markers = [
            three.Mesh(parts.sphere, parts.material(COLOURS["v"]), position=(x, 0, lay.z_value), scale=(0.16,) * 3)
            for x in lay.xs
        ]
        self.query_labels = [
            Label(t, "#111111", LABEL_HEIGHT * big, position=(x, -0.75 * big, lay.z_query + 0.5))
            for t, x in zip(tokens, lay.xs, strict=True)
        ]
        self.key_labels = [
            Label(t, COLOURS["k"], LABEL_HEIGHT * big, position=(x, -0.7 * big, lay.z_key))
            for t, x in zip(tokens, lay.xs, strict=True)
        ]
        self.q_arrows = [Arrow(parts, PALE_Q) for _ in tokens]
        self.k_arrows = [Arrow(parts, COLOURS["k"]) for _ in tokens]
        self.v_arrows = [Arrow(parts, COLOURS["v"]) for _ in tokens]
        # the links: one cylinder per key, each with its own colour
        self.links = [Rod(parts.cylinder, three.MeshStandardMaterial(color=BASE, roughness=0.7)) for _ in tokens]
        self.link_labels = [Label("", "#1b2a41", 0.36 * big, position=(x, -1.2 * big, lay.z_key)) for x in lay.xs]
        self.output_arrow = Arrow(parts, COLOURS["z"], shaft=0.09, head=0.24, head_length=0.42)
        self.output_marker = three.Mesh(parts.sphere, parts.material(COLOURS["z"]), scale=(0.2,) * 3)
        self.output_label = Label("", COLOURS["z"], 0.38 * big)
        for obj in (*self.query_markers, *self.key_markers, *self.value_markers, self.output_marker):
            self.scene.add(obj)
        for label in (*self.query_labels, *self.key_labels, *self.link_labels, self.output_label):
            self.scene.add(label.sprite)
        for arrow in (*self.q_arrows, *self.k_arrows, *self.v_arrows, self.output_arrow):
            self.scene.add(arrow.meshes)
        self.scene.add([rod.mesh for rod in self.links])

        self.camera = three.PerspectiveCamera(fov=FOV, aspect=width / height, near=0.1, far=300, up=(0, 1, 0))
        self.controls = three.OrbitControls(controlling=self.camera)
        self.fit(width / height)
        self.renderer = three.Renderer(
            scene=self.scene, camera=self.camera, controls=[self.controls], width=width, height=height, antialias=True
        )
        self.renderer.layout.width = f"{width}px"
        self.renderer.layout.height = f"{height}px"
        self.drawn: tuple[dict[str, Any] | None, str, int] = (None, "", -1)  # the result, step and focus shown

    def fit(self, aspect: float) -> None:
        """A camera that shows every row from the front and a little above (view.js fit())."""
        lay = self.lay
        half = lay.width / 2 + 1.3
        corners = np.array(
            [(x, y, z) for x in (-half, half) for y in (-1.3, 2.0) for z in (lay.z_value - 0.3, lay.z_output + 0.4)]
        )
        target = np.array([0.0, 0.3, (lay.z_output + lay.z_value) / 2])
        direction = np.array([0.0, (1.9 if aspect < 1.5 else 1.35) if lay.n > 12 else 0.95, 1.0])  # long rows: higher
        direction /= np.linalg.norm(direction)
        tan = math.tan(math.radians(FOV) / 2)

        def fits(distance: float) -> bool:
            eye = target + direction * distance
            forward = (target - eye) / np.linalg.norm(target - eye)
            right = np.cross(forward, [0.0, 1.0, 0.0])
            right /= np.linalg.norm(right)
            up = np.cross(right, forward)
            d = corners - eye  # (8, 3)
            depth = d @ forward
            return bool(
                (depth > 0).all()
                and (np.abs(d @ right / (depth * tan * aspect)) <= 0.96).all()
                and (np.abs(d @ up / (depth * tan)) <= 0.9).all()
            )

        lo, hi = 2.0, 200.0
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
        self.camera.position = tuple(float(x) for x in target + direction * hi)
        self.controls.target = tuple(float(x) for x in target)
        self.camera.lookAt(tuple(float(x) for x in target))

    def update(self, result: dict[str, Any], step: Step, focus: int) -> None:
        """Show `step` of `result` (the API's JSON) for the query `focus`."""
        lay = self.lay
        shown, shown_step, shown_focus = self.drawn
        if result is shown and step.id == shown_step and focus == shown_focus:
            return
        vectors_changed = result is not shown  # new numbers (mask, layer, head): the arrows move too
        self.drawn = (result, step.id, focus)
        drawn = drawing(result)
        qk = max(np.hypot(*drawn["q"].T).max(), np.hypot(*drawn["k"].T).max())
        vz = np.hypot(*drawn["v"].T).max()
        if len(result["v"][0]) > 2:  # projected: z is drawn in the same projection
            vz = max(vz, np.hypot(*drawn["output"].T).max())
        scale = ARROW_MAX / qk if qk > 0 else 1.0
        value_scale = ARROW_MAX / vz if vz > 0 else 1.0

        for i, x in enumerate(lay.xs):
            focused = i == focus
            self.query_markers[i].scale = (0.42,) * 3 if focused else (0.32,) * 3
            self.query_markers[i].material = self.parts.material(COLOURS["q"] if focused else BASE)
            self.query_labels[i].texture.color = "#8a5a00" if focused else "#111111"
            colour = COLOURS["q"] if focused else PALE_Q
            if vectors_changed:
                self.q_arrows[i].set(np.array([x, 0, lay.z_query]), _planar(drawn["q"][i], scale), colour)
                self.k_arrows[i].set(np.array([x, 0, lay.z_key]), _planar(drawn["k"][i], scale))
                self.v_arrows[i].set(np.array([x, 0, lay.z_value]), _planar(drawn["v"][i], value_scale))
            else:
                self.q_arrows[i].set(np.array([x, 0, lay.z_query]), self.q_arrows[i].vec, colour)

        values = result[step.stage][focus]
        levels = row_levels(values, step.links)
        crowded = lay.n > 14  # a crowded row names only its 6 largest values (the table has every one)
        top = set(np.argsort([-(x if x is not None else -1) for x in levels])[:6].tolist()) if crowded else None
        start = np.array([lay.xs[focus], 0.0, lay.z_query])
        for j, rod in enumerate(self.links):
            is_hidden = values[j] is None or (step.masked and result["masked"][focus][j] is None)
            level = levels[j] or 0.0
            radius = 0.025 + 0.2 * math.sqrt(level) if step.links == "weight" else 0.03 + 0.15 * level
            rod.mesh.material.color = link_colour(level)
            end = np.array([lay.xs[j], 0.0, lay.z_key])
            rod.place(start, end - start, 0.0 if is_hidden else radius)
            label = self.link_labels[j]
            label.set(fixed3(values[j]), "#555555" if is_hidden else "#1b2a41")
            label.sprite.visible = top is None or j in top

        show_z = step.output
        origin = np.array([lay.xs[focus], 0.0, lay.z_output])
        self.output_marker.position = tuple(float(c) for c in origin)
        self.output_marker.visible = show_z
        self.output_arrow.set(origin, _planar(drawn["output"][focus], value_scale) if show_z else np.zeros(3))
        self.output_label.set(f"z of “{result['tokens'][focus]}” = {vector(result['output'][focus], 4)}")
        self.output_label.sprite.position = (float(origin[0]), -0.8, float(origin[2]))
        self.output_label.sprite.visible = show_z

    def link_radii(self) -> list[float]:
        """Each link's radius as drawn now (0: no link), for tests and for readers of the scene."""
        return [rod.radius if rod.mesh.visible else 0.0 for rod in self.links]
