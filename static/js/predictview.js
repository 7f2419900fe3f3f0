// Predict first, on the page (the logic and the classroom's seam are in predict.js): the
// switch, the box with a button per key, a column of the table as a guess, and the verdict.

import { el } from "./dom.js";
import * as predict from "./predict.js";

const $ = (id) => document.getElementById(id);

/** Wire the switch and the table's columns; `redraw()` after a switch or a guess. */
export function installPredict(state, redraw) {
  predict.setPredictFirst(state.predict);
  predict.setRedraw(() => {
    state.predict = predict.isPredictFirst();
    redraw();
  });
  $("predict-toggle").addEventListener("change", (e) => predict.setPredictFirst(e.target.checked));
  // a column of the table is a guess while the page waits for one
  $("matrix").addEventListener(
    "click",
    (e) => {
      const btn = e.target.closest('button[data-testid^="col-"]');
      if (!btn || !predict.question()) return;
      e.stopPropagation();
      predict.guess(Number(btn.dataset.focus));
    },
    true,
  );
}

/** The question's id: the view (source, head, mask) and the focused word. */
function questionId(state, row) {
  const source = state.sentence
    ? `s:${state.sentence}|${state.layer}|${state.head}|${state.merge}`
    : `e:${state.example}|${JSON.stringify(state.input)}`;
  return `${source}|${state.mask}|${row}`;
}

/**
 * Draw the predict box for `step` of `view` with row `row` focused. Returns true while the page
 * holds the weights back for a guess (it then shows the masked scores instead).
 */
export function renderPredict(state, step, view, row) {
  const box = $("predict-box");
  $("predict-toggle").checked = state.predict;
  const on = state.predict && step.stage === "weights" && Boolean(view);
  box.hidden = !on;
  if (!on) {
    predict.ask(null);
    return false;
  }
  const id = questionId(state, row);
  const guess = predict.guessFor(id);
  const word = view.tokens[row];
  if (guess === null) {
    $("predict-prompt").textContent = `Predict first: which word will “${word}” attend to most? Pick one below, or click its column in the table.`;
    const keys = view.tokens.flatMap((t, j) => {
      if (view.masked[row][j] === null) return []; // a hidden key cannot win
      const b = el("button", { type: "button", dataset: { testid: `predict-key-${j}`, key: String(j) } }, t);
      b.addEventListener("click", () => predict.guess(j));
      return [b];
    });
    $("predict-keys").replaceChildren(...keys);
    $("predict-result").textContent = "";
    box.classList.add("waiting");
    predict.ask({ id, focus: row, word, tokens: [...view.tokens], masked: [...view.masked[row]] });
    return true;
  }
  predict.ask(null);
  box.classList.remove("waiting");
  $("predict-prompt").textContent = `Your prediction for “${word}”:`;
  $("predict-keys").replaceChildren();
  $("predict-result").textContent = predict.verdict(view.weights[row], guess, view.tokens, view.masked[row]).text;
  return false;
}
