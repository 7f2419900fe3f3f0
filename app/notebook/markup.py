"""The notebook view's table and worked arithmetic, as HTML (the text the page's panels show).

A port of the page's static/js/format.js, table.js and arithmetic.js, so the notebook reads
like the page: 3 decimals with a true minus sign, −∞ for a hidden key, the cividis heat scale
from light (0) to dark (1). Every number comes from a view's `result` (the API's JSON);
nothing is computed here but the text. Token text is always escaped. The worked arithmetic is
held to the page's by tests/notebook/test_parity.py (the page's arithmetic.js run in Node).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from app.notebook.numbers import Step

MINUS = "\u2212"

# Cividis (Nuñez, Anderton & Renslow 2018), the same ten samples as static/js/format.js.
CIVIDIS = (
    (0x00, 0x22, 0x4E), (0x12, 0x32, 0x70), (0x3B, 0x49, 0x6C), (0x57, 0x5C, 0x6D), (0x70, 0x71, 0x73),
    (0x8A, 0x87, 0x79), (0xA5, 0x9C, 0x74), (0xC3, 0xB3, 0x69), (0xE1, 0xCC, 0x55), (0xFE, 0xE8, 0x38),
)  # fmt: skip
# Okabe–Ito colours of the vector kinds (static/css/app.css).
COLOURS = {"q": "#e69f00", "k": "#0072b2", "v": "#009e73", "z": "#d55e00", "hot": "#cc79a7"}
SCENE_BACKGROUND = "#f4f3ee"

EXPLAIN: dict[str, str | dict[str, str]] = {
    "score": "Each query q is compared with every key k by the dot product q·k: coordinates multiplied "
    "pairwise and added. Arrows pointing the same way score high, perpendicular arrows score zero, "
    "opposite arrows score below zero.",
    "scale": "Every score is divided by √d_k, the square root of d_k (the number of coordinates of each query "
    "and key), so that many coordinates do not push softmax into picking a single key.",
    "mask": {
        "full": "Full mask (BERT): every word may look at every word, so nothing changes at this step.",
        "causal": "Causal mask (GPT): a word may look only at itself and earlier words; later keys get −∞, "
        "their links vanish, and softmax will give them exactly 0.",
    },
    "softmax": "Softmax raises e to each score of the row and divides by the row's total: every weight is "
    "positive, −∞ becomes 0, and the row sums to 1.",
    "mix": "The output z of a word is its weights times the values, added up: z = Σ weight × v. "
    "It carries mostly the value of the key it attended to most.",
}


def fixed3(x: float | None) -> str:
    """Exactly 3 decimals with a true minus sign; None (−∞ in the API's JSON) as "−∞"."""
    if x is None:
        return f"{MINUS}∞"
    s = f"{x:.3f}"
    return "0.000" if s == "-0.000" else s.replace("-", MINUS)


def short(x: float | None) -> str:
    """Up to 3 decimals without trailing zeros (6, 4.243, 0.5), for worked arithmetic."""
    if x is None:
        return f"{MINUS}∞"
    s = f"{x:.3f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s.replace("-", MINUS)


def vector(row: list[float], most: int = 3) -> str:
    parts = [short(x) for x in row[:most]] + (["…"] if len(row) > most else [])
    return f"[{', '.join(parts)}]"


def heat_rgb(t: float | None) -> tuple[int, int, int]:
    """(r, g, b) 0–255 for t in 0..1: light yellow (0) to dark blue (1), as the page's heatRgb."""
    t = t if t is not None and math.isfinite(t) else 0.0
    u = 1 - min(1.0, max(0.0, t))
    x = u * (len(CIVIDIS) - 1)
    i = min(len(CIVIDIS) - 2, math.floor(x))
    f = x - i
    r, g, b = (round(c + (d - c) * f) for c, d in zip(CIVIDIS[i], CIVIDIS[i + 1], strict=True))
    return r, g, b


def ink_for(rgb: tuple[int, int, int]) -> str:
    """Black or white text, whichever reads better on the background."""

    def lin(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return "#111" if 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b) > 0.2 else "#fff"


def hex_rgb(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(c):02x}" for c in rgb)


def row_levels(row: list[float | None], mode: str) -> list[float | None]:
    """Where each value of a row sits for drawing, 0..1: the weight itself, or its place in the row's range."""
    if mode == "weight":
        return [None if x is None else min(1.0, max(0.0, x)) for x in row]
    seen = [x for x in row if x is not None]
    lo, hi = min(seen), max(seen)
    return [None if x is None else (x - lo) / (hi - lo) if hi > lo else 0.5 for x in row]


def hidden(result: dict[str, Any], step: Step, i: int, j: int) -> bool:
    return step.masked and result["masked"][i][j] is None


_CAPTIONS = {
    "scores": "Scores q·k",
    "scaled": "Scaled scores q·k / √d_k",
    "masked": "Masked scores, −∞ = hidden",
    "weights": "Weights after softmax",
}
_CELL = "padding:2px 6px;text-align:right;font-family:ui-monospace,'DejaVu Sans Mono',monospace;"


def table_html(result: dict[str, Any], step: Step, focus: int) -> str:
    """The current step's n × n table: rows are queries, columns are keys, cividis heat per row."""
    tokens = [escape(t) for t in result["tokens"]]
    values = result[step.stage]
    notes = ["rows: queries", "columns: keys", *(["z: each query's output"] if step.output else [])]
    notes.append(f"{escape(result['mask'])} mask")
    out = [
        '<table class="a3d-table" style="border-collapse:separate;border-spacing:2px;font-size:13px">',
        f'<caption style="text-align:left;font-weight:600">{_CAPTIONS[step.stage]} ({", ".join(notes)})</caption>',
        '<thead><tr><td style="font-size:11px;color:#4a4a4a">query ↓ key →</td>',
        *(f'<th scope="col" style="color:{COLOURS["k"]}">{t}</th>' for t in tokens),
    ]
    if step.row_sum:
        out.append('<th scope="col">Σ row</th>')
    if step.output:
        out.append('<th scope="col" style="color:#7a2e00">z</th>')
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(values):
        focused = i == focus
        mark = f"background:{COLOURS['q']};" if focused else ""
        out.append(f'<tr data-row="{i}"{" aria-current=true" if focused else ""}>')
        out.append(f'<th scope="row" style="text-align:left;{mark}border-radius:3px">{i + 1} {tokens[i]}</th>')
        levels = row_levels(row, step.links)
        total = 0.0
        for j, x in enumerate(row):
            if x is not None:
                total += x
            if hidden(result, step, i, j):
                style = "background:repeating-linear-gradient(45deg,#eee,#eee 4px,#ddd 4px,#ddd 8px);color:#555"
            else:
                rgb = heat_rgb(levels[j])
                style = f"background:{hex_rgb(rgb)};color:{ink_for(rgb)}"
            box = ";box-shadow:inset 0 -3px 0 #e69f00,inset 0 3px 0 #e69f00" if focused else ""
            out.append(f'<td data-cell="{i}-{j}" style="{_CELL}{style}{box}">{fixed3(x)}</td>')
        if step.row_sum:
            out.append(f'<td data-rowsum="{i}" style="{_CELL}">{fixed3(total)}</td>')
        if step.output:
            z = "<br>".join(fixed3(x) for x in result["output"][i][:3]) + (
                "<br>…" if len(result["output"][i]) > 3 else ""
            )
            out.append(f'<td data-z="{i}" style="{_CELL}color:#7a2e00;border-left:3px solid {COLOURS["z"]}">{z}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def arithmetic(result: dict[str, Any], step: Step, i: int) -> tuple[str, list[tuple[str, str, bool]], str]:
    """(title, [(key, text, hidden)], check) for the focused query i, as the page's arithmetic panel."""
    tokens: list[str] = result["tokens"]
    who = tokens[i]
    n = len(tokens)
    q = result["q"][i]
    root = f"√{result['d_k']}"
    over = " and ".join(result.get("mean_over") or [])
    lines: list[tuple[str, str, bool]] = []
    check = ""
    if over:
        stage, what = {
            "score": ("scores", "q·k"),
            "scale": ("scaled", f"q·k / {root}"),
            "mask": ("masked", "masked scores"),
            "softmax": ("weights", "weights"),
            "mix": ("weights", "weights"),
        }[step.id]
        title = f"Row of “{who}”: the mean over the {over} of each one's {what}"
        total = 0.0
        for j in range(n):
            x = result[stage][i][j]
            total += 0.0 if x is None else x
            if hidden(result, step, i, j):
                lines.append((tokens[j], "hidden in every one (−∞ → 0)", True))
            else:
                lines.append((tokens[j], f"mean = {fixed3(x) if step.links == 'weight' else short(x)}", False))
        if step.id == "softmax":
            check = f"Row check: each head's row sums to 1, so their mean does: {fixed3(total)}"
        if step.id == "mix":
            check = f"z = mean of the {over}' outputs = {vector(result['output'][i], 4)}"
        return title, lines, check
    if step.id == "score":
        title = f"q of “{who}” = {vector(q)} against every key"
        for j in range(n):
            k = result["k"][j]
            terms = [f"{short(a)}·{short(b)}" for a, b in zip(q[:3], k[:3], strict=True)]
            terms += [f"… ({len(q)} terms)"] if len(q) > 3 else []
            lines.append((tokens[j], f"{' + '.join(terms)} = {short(result['scores'][i][j])}", False))
    elif step.id == "scale":
        title = f"Scores of “{who}” divided by {root} = {short(math.sqrt(result['d_k']))}"
        for j in range(n):
            s, x = result["scores"][i][j], result["scaled"][i][j]
            lines.append((tokens[j], f"{short(s)} / {root} = {fixed3(x)}", False))
    elif step.id == "mask":
        causal = result["mask"] == "causal"
        title = f"Causal mask: “{who}” may not see later words" if causal else "Full mask: every key stays visible"
        for j in range(n):
            if hidden(result, step, i, j):
                lines.append((tokens[j], "comes later → −∞ (hidden)", True))
            else:
                lines.append((tokens[j], f"{fixed3(result['masked'][i][j])} (visible)", False))
    elif step.id == "softmax":
        title = f"Weights of “{who}”: e^score / Σ e^score over its row"
        parts = []
        total = 0.0
        for j in range(n):
            w = result["weights"][i][j]
            total += w
            parts.append(fixed3(w))
            if hidden(result, step, i, j):
                lines.append((tokens[j], "−∞ → 0 (hidden)", True))
            else:
                text = f"{fixed3(result['masked'][i][j])} → {fixed3(w)}  ({w * 100:.1f}\u202f%)"
                lines.append((tokens[j], text, False))
        check = f"Row check: {' + '.join(parts)} = {fixed3(total)}"
    else:
        title = f"z of “{who}” = Σ weight × v"
        for j in range(n):
            lines.append(
                (tokens[j], f"{fixed3(result['weights'][i][j])} × {vector(result['v'][j])}", hidden(result, step, i, j))
            )
        check = f"z = {vector(result['output'][i], 4)}"
    return title, lines, check


def arithmetic_html(result: dict[str, Any], step: Step, i: int) -> str:
    title, lines, check = arithmetic(result, step, i)
    explain = EXPLAIN[step.id]
    text = explain if isinstance(explain, str) else explain[result["mask"]]
    out = [
        f'<div class="a3d-arith" style="max-width:34em">'
        f'<p style="margin:0 0 4px;font-weight:700">{escape(step.title)}</p>'
        f'<p style="margin:0 0 6px;border-left:5px solid {COLOURS["q"]};padding-left:6px">{escape(text)}</p>'
        f'<p style="margin:0 0 2px;font-weight:600">{escape(title)}</p>'
        "<ul style=\"list-style:none;margin:0;padding:0;font-family:ui-monospace,'DejaVu Sans Mono',monospace\">"
    ]
    for key, line, is_hidden in lines:
        colour = "color:#666;" if is_hidden else ""
        out.append(f'<li style="{colour}"><b>{escape(key)}</b>: {escape(line)}</li>')
    out.append("</ul>")
    if check:
        out.append(
            f'<p class="a3d-check" style="margin:4px 0 0;font-family:monospace;font-weight:700">{escape(check)}</p>'
        )
    out.append("</div>")
    return "".join(out)
