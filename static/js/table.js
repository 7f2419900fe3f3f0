// The n × n table beside the scene: rows are queries, columns are keys, one stage at a time.
// A real <table> with a caption and scoped headers, so a screen reader can walk it.
// All text goes in through textContent.

import { fixed3, heatRgb, inkFor, rgbCss, rowLevels, vector } from "./format.js";
import { el } from "./dom.js";
import { integer, t } from "./i18n.js";

// A long sentence's table (up to 64 × 64 cells) is drawn a block of rows at a time: the rows on
// the first screen (and the focused one) at once, the rest in the idle time after the view has
// been drawn, so that Enter → first drawn view does not wait for thousands of cells' layout.
const FIRST_ROWS = 24; // rows drawn at once (a 1920×1080 screen shows about as many)
const LATER_ROWS = 20; // rows per idle-time block after them
const whenIdle = (fn) => (window.requestIdleCallback ? window.requestIdleCallback(fn, { timeout: 300 }) : setTimeout(fn, 16));

// each stage's caption (a catalog key: i18n.js)
const CAPTIONS = {
  scores: "table.caption.scores",
  scaled: "table.caption.scaled",
  masked: "table.caption.masked",
  weights: "table.caption.weights",
};

export class MatrixTable {
  /**
   * @param table  the <table> element
   * @param handlers { focus(i), hover(cell | null) }
   */
  constructor(table, handlers) {
    this.table = table;
    this.handlers = handlers;
    this.lastKey = "";
    this.drawing = 0; // counts the tables drawn: a block of rows scheduled for an older one is dropped
    table.addEventListener("pointerover", (e) => {
      const td = e.target.closest("td[data-col]");
      this.handlers.hover(td ? { row: Number(td.dataset.row), col: Number(td.dataset.col) } : null);
    });
    table.addEventListener("pointerleave", () => this.handlers.hover(null));
    table.addEventListener("click", (e) => {
      const btn = e.target.closest("button[data-focus]");
      if (btn) this.handlers.focus(Number(btn.dataset.focus));
    });
  }

  /**
   * Draw `step` of `data`. `win` ({ from, to }, optional) limits the rows and the columns
   * drawn to from..to−1 (a long sentence's neighbourhood of the focus); with colFrom, colTo the
   * columns are another window (a long sentence's opened block of keys: lod.js). Test ids and the
   * Σ row column still count every token.
   */
  update(state, data, step, win = null) {
    const table = this.table;
    const n = data.tokens.length;
    const values = data[step.stage];
    const focus = Math.min(state.focus, n - 1);
    const from = win ? win.from : 0;
    const to = win ? win.to : n;
    const colFrom = win?.colFrom ?? from;
    const colTo = win?.colTo ?? to;
    const key = `${step.id}|${data.mask}|${n}|${from}|${colFrom}`;
    const refill = key !== this.lastKey;
    this.lastKey = key;
    this.hover = state.hover; // rows drawn later mark the hover as it is then (highlight() changes it)

    // the table is drawn anew: a word button that had the keyboard focus (Enter or Space on it
    // focused its row) gets it back in the new table, so the focus ring stays where it was used
    const active = table.contains(document.activeElement) ? document.activeElement.dataset.testid : null;
    table.replaceChildren();
    table.classList.toggle("dense", colTo - colFrom > 7); // as many columns as are drawn (a window: fewer than n)
    table.classList.toggle("crowded", colTo - colFrom > 14);
    const notes = [t("table.note.rows"), t("table.note.columns")];
    if (step.output) notes.push(t("table.note.output"));
    notes.push(t("table.note.mask", { mask: data.mask }));
    const caption = el("caption", {}, `${t(CAPTIONS[step.stage])} `);
    caption.append(el("span", { className: "notes" }, t("table.notes", { notes: notes.join(t("format.phraseSeparator")) })));
    // a window of a long sentence says which (the projector view shows this line alone)
    table.classList.toggle("windowed", Boolean(win));
    const said = colFrom === from ? t("table.window", { from: from + 1, to, n }) : t("table.windowKeys", { from: from + 1, to, keysFrom: colFrom + 1, keysTo: colTo, n });
    if (win) caption.append(el("span", { className: "window", dataset: { testid: "table-window" } }, said));
    table.append(caption);

    const head = el("thead");
    const hr = el("tr");
    hr.append(el("td", { className: "corner" }, t("table.corner")));
    data.tokens.forEach((word, j) => {
      if (j < colFrom || j >= colTo) return;
      const th = el("th", { scope: "col", dataset: { col: String(j) } });
      const btn = el("button", {
        type: "button",
        tabindex: "-1", // the row buttons are the keyboard route; this one is for the mouse
        dataset: { focus: String(j), testid: `col-${j}` },
        "aria-label": t("table.focusColumn", { i: j + 1, token: word }),
      });
      btn.append(el("span", { className: "tok" }, word));
      th.append(btn);
      if (state.hover && state.hover.col === j) th.classList.add("hot");
      hr.append(th);
    });
    if (step.rowSum) hr.append(el("th", { scope: "col", className: "extra" }, t("table.rowSum")));
    if (step.output) hr.append(el("th", { scope: "col", className: "extra out" }, "z"));
    head.append(hr);
    table.append(head);

    const body = el("tbody");
    const row = (i) => {
      const tr = el("tr", { dataset: { row: String(i) } });
      if (i === focus) {
        tr.classList.add("focused");
        tr.setAttribute("aria-current", "true");
      }
      const th = el("th", { scope: "row" });
      // its name starts with what it shows ("4 its"), as WCAG's label-in-name asks
      const btn = el("button", {
        type: "button",
        dataset: { focus: String(i), testid: `row-${i}` },
        "aria-label": t("table.focusRow", { i: integer(i + 1), token: data.tokens[i] }),
      });
      btn.append(el("span", { className: "idx" }, integer(i + 1)), " ", el("span", { className: "tok" }, data.tokens[i]));
      th.append(btn);
      tr.append(th);
      const levels = rowLevels(values[i], step.links);
      let sum = 0;
      for (let j = 0; j < n; j++) if (values[i][j] !== null && (j < colFrom || j >= colTo)) sum += values[i][j];
      for (let j = colFrom; j < colTo; j++) {
        const x = values[i][j];
        const hidden = Boolean(step.masked) && data.masked[i][j] === null;
        const td = el("td", { dataset: { row: String(i), col: String(j), testid: `cell-${i}-${j}` } });
        td.textContent = fixed3(x);
        if (x === null) td.classList.add("neg-inf");
        else sum += x;
        if (hidden) {
          td.classList.add("hidden-key");
          td.setAttribute("title", t("table.hidden"));
        } else {
          const rgb = heatRgb(levels[j]);
          td.style.backgroundColor = rgbCss(rgb);
          td.style.color = inkFor(rgb);
        }
        if (this.hover && this.hover.row === i && this.hover.col === j) td.classList.add("hot");
        if (refill) {
          td.classList.add("fill");
          td.style.animationDelay = `${Math.min(40, i - from) * 70 + Math.min(40, j - colFrom) * 25}ms`;
        }
        tr.append(td);
      }
      if (step.rowSum) tr.append(el("td", { className: "extra", dataset: { testid: `rowsum-${i}` } }, fixed3(sum)));
      if (step.output) {
        // a column vector: one coordinate per line (the first 3 when d_v is larger)
        const td = el("td", { className: "extra out", dataset: { testid: `z-${i}` } });
        const shown = data.output[i].slice(0, 3).map(fixed3);
        if (data.output[i].length > 3) shown.push("…");
        td.setAttribute("aria-label", vector(data.output[i], 8));
        for (const part of shown) td.append(el("span", { className: "coord" }, part));
        tr.append(td);
      }
      return tr;
    };
    const drawing = ++this.drawing;
    const first = Math.min(to, Math.max(from + FIRST_ROWS, focus + 4));
    for (let i = from; i < first; i++) body.append(row(i));
    const later = (start) => {
      if (drawing !== this.drawing || start >= to) return;
      const end = Math.min(to, start + LATER_ROWS);
      for (let i = start; i < end; i++) body.append(row(i));
      whenIdle(() => later(end));
    };
    if (first < to) whenIdle(() => later(first));
    table.append(body);
    if (active) {
      const again = table.querySelector(`[data-testid="${active}"]`) ?? table.querySelector(`[data-testid="row-${focus}"]`);
      (again ?? table).focus({ preventScroll: true });
    }
  }

  /** Mark the hovered cell and its key column without rebuilding the table. */
  highlight(hover) {
    this.hover = hover;
    for (const node of this.table.querySelectorAll(".hot")) node.classList.remove("hot");
    if (!hover) return;
    this.table.querySelector(`td[data-row="${hover.row}"][data-col="${hover.col}"]`)?.classList.add("hot");
    this.table.querySelector(`th[data-col="${hover.col}"]`)?.classList.add("hot");
  }
}
