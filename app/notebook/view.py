"""The notebook view: the 3-D scene with ipywidgets controls, the table and the arithmetic beside it.

    from attention3d import show          # or: from app.notebook import show
    show()                                # the worked example "the cat ate its fish"
    show(sentence="The animal didn't cross the street because it was too tired.", layer=3, head=1)

Every number comes from app.attention / app.model in the kernel (app.notebook.numbers); the
view's `result` is what POST /api/attention would answer for the controls' current values.
"""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets

from app.attention import MASKS, Mask
from app.model.select import HeadChoice, LayerChoice
from app.notebook.markup import arithmetic_html, table_html
from app.notebook.numbers import STEPS, HandSet, Sentence, hand_set
from app.notebook.scene import AttentionScene
from app.schemas import InputError


class AttentionView(widgets.VBox):  # type: ignore[misc]
    """One view: `result` holds the current numbers (the JSON of POST /api/attention)."""

    def __init__(
        self,
        source: HandSet | Sentence,
        *,
        mask: Mask = "full",
        step: str = "score",
        focus: int | str = 0,
        layer: LayerChoice = 0,
        head: HeadChoice = 0,
        mask_given: bool = True,
    ) -> None:
        self.source = source
        if isinstance(source, Sentence):
            self.result: dict[str, Any] = source.result(layer, head, mask, mask_given)
            mask = self.result["mask"]  # a decoder's own mask
        else:
            self.result = source.result(mask)
        tokens: list[str] = self.result["tokens"]
        focus = _focus_index(focus, tokens)
        self._scene = AttentionScene(tokens, width=min(900, max(600, 50 * len(tokens))))  # long rows: wider

        self.step_control = widgets.ToggleButtons(
            options=[(s.id, s.id) for s in STEPS.values()],
            value=step,
            description="step",
            tooltips=[s.title for s in STEPS.values()],
            style={"button_width": "78px", "description_width": "3.5em"},
        )
        self.mask_control = widgets.ToggleButtons(
            options=list(MASKS),
            value=mask,
            description="mask",
            tooltips=["every word sees every word (BERT)", "a word sees only itself and earlier words (GPT)"],
            style={"button_width": "78px", "description_width": "3.5em"},
        )
        self.focus_control = widgets.Dropdown(
            options=[(f"{i + 1}: {t}", i) for i, t in enumerate(tokens)],
            value=focus,
            description="focus",
            layout=widgets.Layout(width="20em"),
            style={"description_width": "3.5em"},
        )
        controls: list[Any] = [self.step_control, self.mask_control, self.focus_control]
        self.layer_control: widgets.Dropdown | None = None
        self.head_control: widgets.Dropdown | None = None
        if isinstance(source, Sentence):
            layers, heads = source.shape()
            self.layer_control = widgets.Dropdown(
                options=[*[(str(i), i) for i in range(layers)], ("mean", "mean")], value=layer, description="layer"
            )
            self.head_control = widgets.Dropdown(
                options=[*[(str(i), i) for i in range(heads)], ("mean", "mean")], value=head, description="head"
            )
            for dropdown in (self.layer_control, self.head_control):
                dropdown.layout = widgets.Layout(width="10em")
                dropdown.style = {"description_width": "3.5em"}
            controls.append(widgets.HBox([self.layer_control, self.head_control]))
            if self.result["kind"] == "gpt2":
                self.mask_control.disabled = True  # a decoder is causal by nature
        self.title = widgets.HTML()
        self.table = widgets.HTML()
        self.arithmetic = widgets.HTML()
        self.note = widgets.HTML()
        side = widgets.VBox(
            [self.title, *controls, self.arithmetic, self.note],
            layout=widgets.Layout(min_width="340px", flex="1 1 340px", padding="0 0 0 10px"),
        )
        # the scene with its controls beside it (below it in a narrow cell), then the n × n table
        top = widgets.HBox(
            [self._scene.renderer, side], layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start")
        )
        self.table.layout = widgets.Layout(overflow="auto", max_width="100%")
        super().__init__([top, self.table])
        self.add_class("attention3d-view")
        for control in (self.mask_control, self.layer_control, self.head_control):
            if control is not None:
                control.observe(self._recompute, names="value")
        for control in (self.step_control, self.focus_control):
            control.observe(self._redraw, names="value")
        self._redraw()

    # --- what the controls do -------------------------------------------------------------

    @property
    def scene(self) -> AttentionScene:
        """The pythreejs objects (renderer, camera, links, arrows), for readers of the drawing."""
        return self._scene

    @property
    def step(self) -> str:
        return str(self.step_control.value)

    @property
    def focus(self) -> int:
        return int(self.focus_control.value)

    def _recompute(self, _change: Any = None) -> None:
        """The mask, layer or head changed: new numbers from the engine, then a new drawing."""
        mask: Mask = self.mask_control.value
        try:
            if isinstance(self.source, Sentence):
                assert self.layer_control is not None and self.head_control is not None
                self.result = self.source.result(self.layer_control.value, self.head_control.value, mask)
            else:
                self.result = self.source.result(mask)
        except InputError as e:  # keep the last good drawing and say why
            self.note.value = f'<p style="color:#9a3400;font-weight:700">{escape(e.field)}: {escape(e.message)}</p>'
            return
        self._redraw()

    def _redraw(self, _change: Any = None) -> None:
        step = STEPS[self.step]
        focus = self.focus
        result = self.result
        with self.hold_sync():
            self._scene.update(result, step, focus)
            self.table.value = table_html(result, step, focus)
            self.arithmetic.value = arithmetic_html(result, step, focus)
            self.title.value = self._title()
            self.note.value = self._note()

    def _title(self) -> str:
        r = self.result
        if "model" in r:
            where = f"layer {r['layer']}, head {r['head']}"
            if r.get("ablate"):
                where += " · switched off: " + ", ".join(f"layer {at} head {h}" for at, h in r["ablate"])
            return f"<b>{escape(r['model'])}</b> · {escape(where)} · {len(r['tokens'])} tokens"
        return f"<b>{escape(' '.join(r['tokens']))}</b> · d_k = {r['d_k']}, d_v = {len(r['v'][0])}"

    def _note(self) -> str:
        r = self.result
        notes = ["Drag to orbit, scroll to zoom, right-drag to pan."]
        if len(r["q"][0]) > 2 or len(r["v"][0]) > 2:
            notes.append(
                f"The arrows show a 2-D PCA projection of the {r['d_k']}-D vectors; the numbers are the full ones."
            )
        if r.get("mean_over"):
            notes.append(f"A mean over the {' and '.join(r['mean_over'])}: each number is the mean of theirs.")
        return f'<p style="color:#4a4a4a;font-size:12px;margin:4px 0">{escape(" ".join(notes))}</p>'


def show(
    example: str | None = None,
    *,
    sentence: str | None = None,
    tokens: list[str] | None = None,
    q: Any = None,
    k: Any = None,
    v: Any = None,
    mask: Mask = "full",
    step: str = "score",
    focus: int | str = 0,
    layer: LayerChoice = 0,
    head: HeadChoice = 0,
    model: str | None = None,
    ablate: list[tuple[int, int]] | None = None,
) -> AttentionView:
    """Draw the attention of an example (by id), of q, k, v set by hand, or of a sentence.

    example   "the-cat-ate-its-fish" (the default) or "select-from-customers" (app.examples)
    sentence  text for a model: `model`, an id of GET /api/models ("smollm2-135m": the decoder),
              else the server's (all-MiniLM-L6-v2 unless $ATTENTION_MODEL); layer, head: 0-based or "mean"
    tokens, q, k, v  one head set by hand: q, k (n × d_k) and v (n × d_v), lists or arrays
    mask      "full" (BERT) or "causal" (GPT);  step  score, scale, mask, softmax or mix
    focus     the query shown: its index, or the word itself
    ablate    with sentence: heads switched off, [(layer, head), …] — their outputs zeroed before W_O,
              the rest of the model run as usual (POST /api/ablate); the view shows the rerun's numbers

    Returns the widget; its `result` follows the controls. Bad input raises a ValueError that
    names the field, with the API's message.
    """
    if mask not in MASKS:
        raise InputError("mask", f"mask must be one of {list(MASKS)}, not {mask!r}")
    if step not in STEPS:
        raise InputError("step", f"step must be one of {list(STEPS)}, not {step!r}")
    if sentence is not None:
        given = [
            name
            for name, a in (("example", example), ("tokens", tokens), ("q", q), ("k", k), ("v", v))
            if a is not None
        ]
        if given:
            raise InputError(given[0], f"{given[0]} cannot be sent with sentence: the model makes tokens, q, k and v")
        for name, value in (("layer", layer), ("head", head)):
            if not (value == "mean" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)):
                raise InputError(name, f"{name} must be a 0-based integer or 'mean', not {value!r}")
        source: HandSet | Sentence = Sentence(sentence, model, _pairs(ablate))
    else:
        if model is not None:
            raise InputError("model", "model goes with sentence: hand-set q, k, v have no model")
        if ablate:
            raise InputError(
                "ablate", "ablate goes with sentence: hand-set q, k, v have no model to switch heads off in"
            )
        source = hand_set(example, tokens, q, k, v)
    return AttentionView(source, mask=mask, step=step, focus=focus, layer=layer, head=head, mask_given=mask != "full")


def _pairs(ablate: Any) -> tuple[tuple[int, int], ...]:
    """ablate as (layer, head) pairs of whole numbers ≥ 0, or an InputError naming it."""
    out = []
    for k, pair in enumerate(ablate or []):
        ok = isinstance(pair, list | tuple) and len(pair) == 2
        if not ok or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in pair):
            raise InputError("ablate", f"ablate[{k}] must be a (layer, head) pair of whole numbers ≥ 0, not {pair!r}")
        out.append((pair[0], pair[1]))
    return tuple(out)


def _focus_index(focus: int | str, tokens: list[str]) -> int:
    if isinstance(focus, str):
        if focus not in tokens:
            raise InputError("focus", f"focus {focus!r} is not one of the tokens {tokens}")
        return tokens.index(focus)
    if isinstance(focus, bool) or not isinstance(focus, int) or not 0 <= focus < len(tokens):
        raise InputError(
            "focus", f"focus must be a token's index 0 … {len(tokens) - 1} or the token itself, not {focus!r}"
        )
    return focus
