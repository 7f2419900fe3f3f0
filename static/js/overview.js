// The overview: every layer × head of the sentence as a small heatmap (a canvas each,
// drawn with putImageData from POST /api/overview's pooled weights: one cell per block of
// tokens, at most 32 × 32 whatever the sentence's length), inside a button that picks that head.
// Rows are layers, columns are heads; the shown head (or the heads a mean covers) is marked.
// One Tab stop for the whole grid (roving tabindex): the arrow keys, Home and End move
// between heads, Enter or Space picks one.

import { heatRgb } from "./format.js";
import { el } from "./dom.js";
import { kvGroups } from "./model.js";
import { decimal, integer, listOf, t } from "./i18n.js";

/** Draw a B × B map of thousandths (a head's pooled weights). */
function paint(canvas, matrix) {
  const n = matrix.length;
  canvas.width = n;
  canvas.height = n;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(n, n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const [r, g, b] = heatRgb(matrix[i][j] / 1000);
      const o = 4 * (i * n + j);
      img.data[o] = r;
      img.data[o + 1] = g;
      img.data[o + 2] = b;
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
}

/** The element-wise mean of same-sized matrices (for drawing a mean's thumbnail). */
function meanMatrix(list) {
  if (list.length === 1) return list[0];
  return list[0].map((row, i) => row.map((_, j) => list.reduce((s, m) => s + m[i][j], 0) / list.length));
}

export class Overview {
  /**
   * @param grid    the element the heatmaps go into
   * @param status  a <p> for "loading…" and "unavailable" messages
   * @param onPick  callback(layer, head)
   */
  constructor(grid, status, onPick) {
    this.grid = grid;
    this.status = status;
    this.data = null;
    this.buttons = [];
    grid.addEventListener("click", (e) => {
      const btn = e.target.closest("button[data-layer]");
      if (!btn) return;
      this.rove(btn);
      const pick = (x) => (x === "mean" ? "mean" : Number(x));
      onPick(pick(btn.dataset.layer), pick(btn.dataset.head));
    });
    grid.addEventListener("keydown", (e) => this.onKey(e));
  }

  onKey(e) {
    const btn = e.target.closest?.("button[data-layer]");
    if (!btn || !this.data) return;
    const cols = this.data.heads + 1; // the heads and their mean
    const i = this.buttons.indexOf(btn);
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols };
    let next = i;
    if (e.key in moves) next = i + moves[e.key];
    else if (e.key === "Home") next = i - (i % cols);
    else if (e.key === "End") next = i - (i % cols) + cols - 1;
    else return;
    e.preventDefault();
    e.stopPropagation(); // the page's own arrow keys step through the lesson
    if (next < 0 || next >= this.buttons.length) return;
    this.rove(this.buttons[next]);
    this.buttons[next].focus();
  }

  /** Make `btn` the grid's one Tab stop. */
  rove(btn) {
    for (const b of this.buttons) b.tabIndex = b === btn ? 0 : -1;
  }

  /** A message instead of the heatmaps (loading, or why there is no overview). */
  message(text) {
    this.status.textContent = text;
    this.status.hidden = !text;
  }

  clear() {
    this.data = null;
    this.buttons = [];
    this.grid.replaceChildren();
    this.grid.dataset.count = "0";
  }

  /**
   * Draw every head of an /api/overview response (once per response), with a "mean" column (each
   * layer's heads) and a "mean" row (each head over the layers, and all of them): the means are
   * drawn from the pooled maps, only to show what a pick will give; picking one asks the server
   * for its numbers like any other. A head's title says how spread out it is (entropy) and how
   * far it reads (distance).
   */
  show(data, kvHeads = data.heads) {
    if (data === this.data) return;
    this.data = data;
    this.grid.replaceChildren();
    this.buttons = [];
    this.grid.style.setProperty("--heads", String(data.heads + 1));
    // grouped-query attention: a row naming the key/value head each group of query heads shares
    const groups = kvGroups(data.heads, kvHeads);
    const kvOf = (h) => groups.findIndex((g) => g.includes(h));
    this.grid.dataset.kvHeads = String(groups.length);
    if (groups.length < data.heads) {
      this.grid.append(el("span", { className: "ov-corner", "aria-hidden": "true" }, t("overview.shared")));
      for (const [g, members] of groups.entries()) {
        const span = el("span", { className: `ov-kv kv-${g % 3}`, dataset: { kv: String(g), testid: `ov-kv-${g}` } }, t("overview.kvHead", { g }));
        span.style.gridColumn = `span ${members.length}`;
        span.title = t("overview.kvTitle", { heads: listOf(members.map(integer)), g });
        this.grid.append(span);
      }
      this.grid.append(el("span", { "aria-hidden": "true" }));
    }
    this.grid.append(el("span", { className: "ov-corner", "aria-hidden": "true" }, t("overview.corner")));
    for (let h = 0; h <= data.heads; h++) {
      const grouped = h < data.heads && groups.length < data.heads;
      const attrs = { className: grouped ? `ov-head kv-${kvOf(h) % 3}` : "ov-head", "aria-hidden": "true" };
      if (grouped) attrs.dataset = { kv: String(kvOf(h)) };
      this.grid.append(el("span", attrs, h < data.heads ? integer(h) : t("model.mean")));
    }
    const L = data.layers;
    const H = data.heads;
    const all = (l, h) =>
      l === "mean" && h === "mean"
        ? data.pooled.flat()
        : l === "mean"
          ? data.pooled.map((layer) => layer[h])
          : h === "mean"
            ? data.pooled[l]
            : [data.pooled[l][h]];
    const label = (l, h) => t("overview.cell", { which: l === "mean" ? (h === "mean" ? "all" : "layers") : h === "mean" ? "heads" : "one", layer: String(l), head: String(h) });
    const picks = (n) => [...Array.from({ length: n }, (_, i) => i), "mean"];
    for (const l of picks(L)) {
      this.grid.append(el("span", { className: "ov-layer", "aria-hidden": "true" }, l === "mean" ? t("model.mean") : integer(l)));
      for (const h of picks(H)) {
        const isMean = l === "mean" || h === "mean";
        const kv = !isMean && groups.length < H ? kvOf(h) : null;
        const btn = el("button", {
          type: "button",
          className: isMean ? "ov-cell ov-mean" : kv === null ? "ov-cell" : `ov-cell kv-${kv % 3}`,
          "aria-label": kv === null ? label(l, h) : t("overview.cellKv", { label: label(l, h), kv }),
          "aria-pressed": "false",
          tabindex: "-1",
          dataset: { layer: String(l), head: String(h), testid: `head-${l}-${h}` },
        });
        if (!isMean) btn.title = t("overview.cellTitle", { label: label(l, h), entropy: decimal(data.entropy[l][h], 2), distance: decimal(data.distance[l][h], 1) });
        const canvas = el("canvas", { "aria-hidden": "true" });
        paint(canvas, meanMatrix(all(l, h)));
        btn.append(canvas);
        this.grid.append(btn);
        this.buttons.push(btn);
      }
    }
    this.grid.dataset.count = String(L * H);
    if (this.buttons.length) this.buttons[0].tabIndex = 0;
  }

  /** Mark the heads switched off ([[layer, head], …]): a class and a word in each one's name. */
  markOff(pairs) {
    const off = new Set(pairs.map(([l, h]) => `${l}.${h}`));
    for (const btn of this.buttons) {
      const on = off.has(`${btn.dataset.layer}.${btn.dataset.head}`);
      btn.classList.toggle("off", on);
      btn.dataset.label ??= btn.getAttribute("aria-label"); // its name as show() gave it
      btn.setAttribute("aria-label", on ? t("overview.off.label", { label: btn.dataset.label }) : btn.dataset.label);
    }
  }

  /** Mark the shown head; a mean marks every head it averages. */
  highlight(layer, head) {
    for (const btn of this.buttons) {
      const l = btn.dataset.layer === "mean" ? "mean" : Number(btn.dataset.layer);
      const h = btn.dataset.head === "mean" ? "mean" : Number(btn.dataset.head);
      const exact = l === layer && h === head;
      const isMean = l === "mean" || h === "mean";
      const covered = !isMean && (layer === "mean" || l === layer) && (head === "mean" || h === head);
      btn.classList.toggle("current", exact);
      btn.classList.toggle("covered", covered && !exact);
      btn.setAttribute("aria-pressed", String(exact));
    }
    const current = this.buttons.find((b) => b.classList.contains("current"));
    if (current && !this.grid.contains(document.activeElement)) this.rove(current);
  }
}
