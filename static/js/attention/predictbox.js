// Predict first, on the page: the switch, the box with a button per key, a column of the table
// as a guess, and the verdict (the question and the verdict come from attention/derive.js).

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { canGuess } from "../predictfirst.js";

const $ = (id) => document.getElementById(id);

export class PredictBox {
  /** `act`: the store's actions; `question()`: the question on screen now, or null. */
  constructor(act, question) {
    this.act = act;
    this.question = question;
    $("predict-toggle").addEventListener("change", (e) => act.setPredict(e.target.checked));
    // a column of the table is a guess while the page waits for one
    $("matrix").addEventListener(
      "click",
      (e) => {
        const btn = e.target.closest('button[data-testid^="col-"]');
        if (!btn || !question()) return;
        e.stopPropagation();
        this.guess(Number(btn.dataset.focus));
      },
      true,
    );
  }

  guess(j) {
    const q = this.question();
    if (!canGuess(q, j)) return null;
    this.act.guess(q.id, j);
    return q;
  }

  /** Draw the box for the derived view `v` (predict first on: state.predict). */
  update(v, predictOn) {
    const box = $("predict-box");
    $("predict-toggle").checked = predictOn;
    const q = v.question;
    box.hidden = !q && !v.guessText;
    box.classList.toggle("waiting", Boolean(q));
    if (q) {
      $("predict-prompt").textContent = t("predict.prompt", { word: q.word });
      const keys = q.tokens.flatMap((t, j) => {
        if (q.masked[j] === null) return []; // a hidden key cannot win
        const b = el("button", { type: "button", dataset: { testid: `predict-key-${j}`, key: String(j) } }, t);
        b.addEventListener("click", () => this.guess(j));
        return [b];
      });
      $("predict-keys").replaceChildren(...keys);
      $("predict-result").textContent = "";
    } else if (v.guessText) {
      $("predict-prompt").textContent = t("predict.yours", { word: v.shown.tokens[v.focusRow] });
      $("predict-keys").replaceChildren();
      $("predict-result").textContent = v.guessText;
    }
  }
}
