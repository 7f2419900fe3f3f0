// The attention view's text panels, drawn from the state: the editor's note, the 3D view's
// note, the error banner, the worked arithmetic, the full-vs-causal comparison, and what the
// page refuses before asking the server. main.js calls these from render(); none keeps state.

import { renderCompare } from "./compare.js";
import { el } from "./dom.js";
import { mergeView } from "./model.js";

const $ = (id) => document.getElementById(id);
const COMPARE_MAX = 20; // rows the side-by-side tables can show readably

export function renderNotes(state) {
  const note = $("editor-note");
  const sentence = Boolean(state.sentence);
  $("editor").classList.toggle("model-mode", sentence);
  if (sentence) {
    note.textContent =
      "The numbers of a typed sentence are the real model's (32 per vector, 6 layers × 12 heads), " +
      "so there is nothing to edit here: pick an example above to set Q, K and V by hand.";
  } else if (state.edited) {
    note.textContent =
      "You have edited the numbers: the page recomputes as you type, and the address bar keeps " +
      "your edits, so a copied link shows exactly this.";
  } else {
    note.textContent = "Every number of the example is editable: change one and watch the table and the links follow.";
  }
  $("example-select").value = state.example && !state.edited ? state.example : "";
  if (state.sentence) $("sentence-input").value = state.sentence;
}

/** `drawn`: the PCA drawing of `data` (sentence mode); `window`: the 3D view's rows, or null. */
export function renderSceneNote(state, data, drawn, window, merged = false) {
  const dk = data.d_k;
  const dv = data.v[0].length;
  if (state.sentence) {
    const pct = (x) => `${Math.round(x * 100)} %`;
    const parts = [
      `q and k drawn by PCA over this head's queries and keys: the first two components explain ${pct(drawn.qk ?? 1)} of their variance; ` +
        `v (and z) by their own PCA (${pct(drawn.vz ?? 1)}). Arrows start at each word and show where its vector sits relative to the mean.` +
        ` The table and the arithmetic use all ${dk} numbers; hover a word for them.`,
    ];
    if (merged) parts.push("A merged word's arrows are the means of its pieces'.");
    if (data.mean_over?.length) parts.push(`For a mean, q, k and v are the means of the ${data.mean_over.join(" and ")}' vectors (a summary for drawing).`);
    if (window) parts.push(`The 3D view shows ${window.count} of the ${window.n} rows (${window.from}–${window.to}, around the focused one); the table has all.`);
    $("scene-note").textContent = parts.join(" ");
    return;
  }
  $("scene-note").textContent =
    dk > 2 || dv > 2
      ? `These vectors have d_k = ${dk} and d_v = ${dv} coordinates; the arrows show only the first two ` +
        "(x to the right, y up). The table and the arithmetic use all of them."
      : "Each vector has two coordinates, drawn in the plane of its row: x to the right, y up " +
        "(q and k share one scale, v and z another).";
}

export function renderBanner(state, data) {
  const banner = $("error-banner");
  let text = "";
  if (state.errors.length) {
    const messages = state.errors.map((e) => e.msg).join(" ");
    if (state.sentence) text = data ? `${messages} (The page still shows the last answer.)` : messages;
    else text = data ? "That edit cannot be computed yet (see the message by the editor below); the page still shows the last valid numbers." : messages;
  } else if (state.notice) text = state.notice;
  banner.hidden = !text;
  banner.textContent = text;
}

export function renderArithmetic(arith) {
  $("arith-title").textContent = arith.title;
  const lines = arith.lines.map((line, j) => {
    const li = el("li", { dataset: { testid: `arith-${j}` }, ...(line.hidden ? { className: "hidden-key" } : {}) });
    li.append(el("span", { className: "arith-key" }, line.key), el("span", { className: "arith-text" }, line.text));
    return li;
  });
  $("arith-lines").replaceChildren(...lines);
  $("arith-check").textContent = arith.check;
  $("arith-check").hidden = !arith.check;
}

/** Full vs causal side by side; `drawingFor(data)` gives a response's PCA drawing (to merge pieces). */
export function renderComparison(state, focusRow, drawingFor) {
  const box = $("compare-tables");
  const { full, causal } = state.result;
  if (!full || !causal) {
    box.replaceChildren(document.createTextNode("This model is a decoder: it only ever runs with its causal mask."));
    return;
  }
  const merged = Boolean(state.sentence) && state.merge;
  const asShown = (d) => (merged ? mergeView(d, drawingFor(d), state.sentence) : d);
  const f = asShown(full);
  if (f.tokens.length > COMPARE_MAX) {
    box.replaceChildren(
      document.createTextNode(`${f.tokens.length} rows are too many to compare side by side; press M to switch the table between the masks.`),
    );
    return;
  }
  const rowOf = merged ? Math.max(0, f.merged.groups.findIndex((g) => g.includes(state.focus))) : focusRow;
  renderCompare(box, { full: f, causal: asShown(causal) }, rowOf);
}

/** What the page can refuse before asking the server: cells that are not numbers, unnamed words. */
export function typingErrors(input) {
  const errors = [];
  input.tokens.forEach((t, i) => {
    if (String(t).trim() === "") errors.push({ field: "tokens", msg: `Word ${i + 1} has no name: type one (it labels its row and column).` });
  });
  for (const m of ["q", "k", "v"]) {
    input[m].forEach((row, r) =>
      row.forEach((x, c) => {
        if (typeof x !== "number") {
          errors.push({ field: m, msg: x === "" ? `${m}[${r}][${c}]: empty; type a number` : `${m}[${r}][${c}]: “${x}” is not a number` });
        }
      }),
    );
  }
  return errors;
}
