// The difference view: weights under the full and the causal mask side by side, and the
// change between them. Both come from the server (the page asks for both masks).

import { deltaRgb, fixed3, heatRgb, inkFor, rgbCss } from "../format.js";
import { t } from "../i18n.js";
import { COMPARE_MAX, mergeView } from "../model.js";
import { el } from "../dom.js";
import { drawingFor } from "./derive.js";

function cell(tag, text, props = {}) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) node.setAttribute(k, v);
  node.textContent = text;
  return node;
}

function miniTable(title, tokens, rows, colour, testid, focus) {
  const table = document.createElement("table");
  table.className = "mini";
  table.dataset.testid = testid;
  table.append(cell("caption", title));
  const head = document.createElement("tr");
  head.append(cell("td", ""));
  for (const t of tokens) head.append(cell("th", t, { scope: "col" }));
  const thead = document.createElement("thead");
  thead.append(head);
  const tbody = document.createElement("tbody");
  rows.forEach((row, i) => {
    const tr = document.createElement("tr");
    if (i === focus) tr.className = "focused";
    tr.append(cell("th", tokens[i], { scope: "row" }));
    row.forEach((x) => {
      const td = cell("td", x.text);
      const rgb = colour(x.value);
      td.style.backgroundColor = rgbCss(rgb);
      td.style.color = inkFor(rgb);
      tr.append(td);
    });
    tbody.append(tr);
  });
  table.append(thead, tbody);
  return table;
}

/** Rows and columns from..to−1 of a square matrix (the whole of it without a window). */
const windowOf = (m, win) => (win ? m.slice(win.from, win.to).map((row) => row.slice(win.from, win.to)) : m);

/** `win` ({ from, to } or null): only those rows and columns (the projector view's, around the focus). */
function renderCompare(container, result, focus, win) {
  const full = windowOf(result.full.weights, win);
  const causal = windowOf(result.causal.weights, win);
  const tokens = win ? result.full.tokens.slice(win.from, win.to) : result.full.tokens;
  focus -= win ? win.from : 0;
  const asCells = (m) => m.map((row) => row.map((x) => ({ value: x, text: fixed3(x) })));
  const delta = causal.map((row, i) =>
    row.map((x, j) => {
      const d = x - full[i][j];
      const text = Math.abs(d) < 0.0005 ? "·" : (d > 0 ? "+" : "") + fixed3(d);
      return { value: d, text };
    }),
  );
  const n = result.full.tokens.length;
  const note = win ? [el("p", { className: "compare-window", dataset: { testid: "compare-window" } }, t("table.window", { from: win.from + 1, to: win.to, n }))] : [];
  container.replaceChildren(
    ...note,
    miniTable(t("compare.full"), tokens, asCells(full), heatRgb, "compare-full", focus),
    miniTable(t("compare.causal"), tokens, asCells(causal), heatRgb, "compare-causal", focus),
    miniTable(t("compare.change"), tokens, delta, deltaRgb, "compare-delta", focus),
  );
}

/**
 * Full vs causal side by side in `box`, for the derived view `v` (v.compare: both masks'
 * answers, or null while the weights are withheld).
 */
export function renderComparison(box, v, sentence, focus) {
  const section = box.closest("section");
  if (section) section.hidden = !v.compare;
  if (!v.compare) {
    box.replaceChildren();
    return;
  }
  const { full, causal, merged, window: win } = v.compare;
  if (!full) {
    box.replaceChildren(document.createTextNode(t("compare.decoder")));
    return;
  }
  const asShown = (d) => (merged ? mergeView(d, drawingFor(d), sentence) : d);
  const f = asShown(full);
  if (f.tokens.length > COMPARE_MAX || !causal) {
    // (the causal answer of so long a sentence comes when the page switches to it: model.js)
    box.replaceChildren(
      document.createTextNode(t("compare.tooMany", { n: f.tokens.length })),
    );
    return;
  }
  const rowOf = merged ? Math.max(0, f.merged.groups.findIndex((g) => g.includes(focus))) : v.focusRow;
  renderCompare(box, { full: f, causal: asShown(causal) }, rowOf, win);
}
