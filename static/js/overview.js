// The overview: every layer × head of the sentence as a small heatmap (a canvas each,
// drawn with putImageData from POST /api/heads), inside a button that picks that head.
// Rows are layers, columns are heads; the shown head (or the heads a mean covers) is marked.
// One Tab stop for the whole grid (roving tabindex): the arrow keys, Home and End move
// between heads, Enter or Space picks one.

import { heatRgb } from "./format.js";

function el(tag, props = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "className") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  if (text !== null) node.textContent = text;
  return node;
}

function paint(canvas, matrix) {
  const n = matrix.length;
  canvas.width = n;
  canvas.height = n;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(n, n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const [r, g, b] = heatRgb(matrix[i][j]);
      const o = 4 * (i * n + j);
      img.data[o] = r;
      img.data[o + 1] = g;
      img.data[o + 2] = b;
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
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
      onPick(Number(btn.dataset.layer), Number(btn.dataset.head));
    });
    grid.addEventListener("keydown", (e) => this.onKey(e));
  }

  onKey(e) {
    const btn = e.target.closest?.("button[data-layer]");
    if (!btn || !this.data) return;
    const heads = this.data.heads;
    const i = this.buttons.indexOf(btn);
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: heads, ArrowUp: -heads };
    let next = i;
    if (e.key in moves) next = i + moves[e.key];
    else if (e.key === "Home") next = i - (i % heads);
    else if (e.key === "End") next = i - (i % heads) + heads - 1;
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

  /** Draw every head of an /api/heads response (once per response). */
  show(data) {
    if (data === this.data) return;
    this.data = data;
    this.grid.replaceChildren();
    this.buttons = [];
    this.grid.style.setProperty("--heads", String(data.heads));
    this.grid.append(el("span", { className: "ov-corner", "aria-hidden": "true" }, "layer ↓ head →"));
    for (let h = 0; h < data.heads; h++) {
      this.grid.append(el("span", { className: "ov-head", "aria-hidden": "true" }, String(h)));
    }
    for (let l = 0; l < data.layers; l++) {
      this.grid.append(el("span", { className: "ov-layer", "aria-hidden": "true" }, String(l)));
      for (let h = 0; h < data.heads; h++) {
        const btn = el("button", {
          type: "button",
          className: "ov-cell",
          "aria-label": `layer ${l} head ${h}`,
          "aria-pressed": "false",
          tabindex: "-1",
          dataset: { layer: String(l), head: String(h), testid: `head-${l}-${h}` },
        });
        const canvas = el("canvas", { "aria-hidden": "true" });
        paint(canvas, data.weights[l][h]);
        btn.append(canvas);
        this.grid.append(btn);
        this.buttons.push(btn);
      }
    }
    this.grid.dataset.count = String(this.buttons.length);
    if (this.buttons.length) this.buttons[0].tabIndex = 0;
  }

  /** Mark the shown head; a mean marks every head it averages. */
  highlight(layer, head) {
    for (const btn of this.buttons) {
      const l = Number(btn.dataset.layer);
      const h = Number(btn.dataset.head);
      const exact = l === layer && h === head;
      const covered = (layer === "mean" || l === layer) && (head === "mean" || h === head);
      btn.classList.toggle("current", exact);
      btn.classList.toggle("covered", covered && !exact);
      btn.setAttribute("aria-pressed", String(exact));
    }
    const current = this.buttons.find((b) => b.classList.contains("current"));
    if (current && !this.grid.contains(document.activeElement)) this.rove(current);
  }
}
