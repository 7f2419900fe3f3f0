"""write(prompt, …): the decoder writing in a notebook, token by token, with the controls of the page.

    from app.notebook.write import write      # or: from attention3d import write
    write("The capital of France is", max_new_tokens=8)

The writing runs in the kernel (app.model.generate, the KV cache), as POST /api/generate does: the
view's `result` is that route's one-object answer (Accept: application/json) for the same request.
A slider steps through the written tokens: each shows the cached tokens coloured by the weight the
query that chose it gave them (layer/head), and the ten likeliest candidates as bars. The
temperature, top-k and top-p sliders redraw the bars live from the step's own logits (the written
tokens stay: a new writing is a new write()).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

import ipywidgets as widgets
from pydantic import ValidationError

from app.errors import InputError
from app.model import generate, prompt, registry
from app.model.generate import Sampling
from app.notebook.markup import heat_rgb
from app.notebook.numbers import backend
from app.schemas import GenerateRequest

BARS = generate.CANDIDATES


class WriteView(widgets.VBox):  # type: ignore[misc]
    """One writing: `steps` (one generate.Written per token), `done`, and `result` (the API's JSON)."""

    def __init__(self, req: GenerateRequest, backend: str = "numpy") -> None:
        entry, handle = registry.writer(req.model, None)
        sampling = Sampling(req.temperature, req.top_k, req.top_p)
        w = prompt.begin(handle, req.prompt, req.layer, req.head, req.chat, req.max_new_tokens, sampling, req.seed,
                         req.ablate, backend)  # fmt: skip
        model, layer = w.model, w.layer
        self.model, self.layer, self.head = model, layer, req.head
        self.prompt_tokens: list[str] = w.encoded.tokens
        self.steps, self.done, self.result = w.whole(entry.id, req.head)  # result: the API's answer to this request

        last = max(len(self.steps) - 1, 0)
        self.step_control = widgets.IntSlider(value=last, min=0, max=last, description="token")
        self.temperature = widgets.FloatSlider(value=req.temperature, min=0, max=2, step=0.05, description="temp")
        self.top_k = widgets.IntSlider(value=req.top_k, min=0, max=100, description="top-k")
        self.top_p = widgets.FloatSlider(value=req.top_p, min=0.05, max=1, step=0.05, description="top-p")
        self.cache_html = widgets.HTML()
        self.bars_html = widgets.HTML()
        for control in (self.step_control, self.temperature, self.top_k, self.top_p):
            control.observe(self._redraw, names="value")
        self._redraw()
        kv = req.head // model.spec.groups
        head = f"<b>{escape(model.spec.name)}</b> · layer {layer}, head {req.head} (KV head {kv})"
        super().__init__(
            [
                widgets.HTML(f"{head} · {len(self.steps)} tokens written ({escape(self.done.reason)})"),
                self.step_control,
                self.cache_html,
                widgets.HBox([self.temperature, self.top_k, self.top_p]),
                self.bars_html,
            ]
        )

    def sampling(self) -> Sampling:
        return Sampling(float(self.temperature.value), int(self.top_k.value), float(self.top_p.value))

    def candidates(self, index: int) -> list[generate.Candidate]:
        """The step's ten likeliest tokens, with their chance of being drawn under the sliders' settings."""
        return generate.candidates(self.model, self.steps[index].logits, self.sampling(), BARS)

    def _redraw(self, _: Any = None) -> None:
        if not self.steps:
            self.cache_html.value = self.bars_html.value = "<i>nothing written</i>"
            return
        i = int(self.step_control.value)
        step = self.steps[i]
        cached = self.prompt_tokens + [w.token for w in self.steps[:i]]  # what the query reads (kv_len tokens)
        spans = []
        for j, (token, weight) in enumerate(zip(cached, step.watched.weights, strict=True)):
            r, g, b = heat_rgb(float(weight))
            ink = "#fff" if weight > 0.5 else "#111"
            title = f"{weight:.3f}" + (" (token 0: the attention sink)" if j == 0 else "")
            style = f"background:rgb({r},{g},{b});color:{ink};padding:1px 2px;margin:1px;border-radius:3px"
            spans.append(f'<span title="{escape(title)}" style="{style};white-space:pre">{escape(token)}</span>')
        chosen = f'<b style="border:2px solid #222;padding:1px 3px;white-space:pre">{escape(step.token)}</b>'
        sink = float(step.watched.weights[0])
        self.cache_html.value = (
            f'<div style="font-family:monospace;line-height:1.9">{"".join(spans)} → {chosen}</div>'
            f'<p style="color:#4a4a4a;font-size:12px;margin:4px 0">The query of the last cached token reads '
            f"{step.kv_len} cached keys; {sink:.0%} of its weight goes to token 0, the attention sink.</p>"
        )
        rows = []
        for c in self.candidates(i):
            width = round(240 * c.p_sample)
            mark = " ←" if c.id == step.id else ""
            rows.append(
                f'<tr><td style="font-family:monospace;white-space:pre">{escape(c.token)}</td>'
                f'<td><div style="background:#4a7bd1;height:10px;width:{width}px"></div></td>'
                f"<td>{c.p_sample:.3f}</td><td style='color:#777'>{c.p:.3f}{mark}</td></tr>"
            )
        self.bars_html.value = (
            '<table style="font-size:12px"><tr><th>candidate</th><th></th><th>drawn with</th><th>model</th></tr>'
            + "".join(rows)
            + "</table>"
        )


def write(
    prompt: str,
    *,
    model: str | None = None,
    max_new_tokens: int = 16,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    layer: int | None = None,
    head: int = 0,
    chat: bool = False,
    ablate: Sequence[tuple[int, int]] = (),
) -> WriteView:
    """Write after `prompt` with the decoder (default smollm2-135m), as POST /api/generate does;
    ablate: (layer, head) pairs switched off while it writes.

    Bad input raises a ValueError (InputError) naming the field, with the API's message.
    """
    body = {"model": model, "prompt": prompt, "max_new_tokens": max_new_tokens, "temperature": temperature,
            "top_k": top_k, "top_p": top_p, "seed": seed, "layer": layer, "head": head, "chat": chat,
            "ablate": [list(p) for p in ablate]}  # fmt: skip
    try:
        req = GenerateRequest.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(str(err["loc"][0]) if err["loc"] else "prompt", err["msg"]) from None
    return WriteView(req, backend())
