// Predict first, as plain functions (issue 7). With "predict first" on (state.predict), the
// page holds the weights back at the softmax and mix steps until the learner has picked the key
// the focused query will attend to most; the guesses are in the state (state.guesses, by
// question), the question on screen is derived (attention/derive.js), the box is drawn by
// attention/predictbox.js. Nothing here keeps state.
//
// A question's id names the view (source, layer/head, mask, focus), so one guess serves both
// the softmax and the mix step of that view.

import { fixed3 } from "./format.js";
import { t } from "./i18n.js";

/** The question's id: the view (source, head, mask) and the focused word. */
export function questionId(state, row) {
  const source = state.sentence
    ? `s:${state.sentence}|${state.layer}|${state.head}|${state.merge}`
    : `e:${state.example}|${JSON.stringify(state.input)}`;
  return `${source}|${state.mask}|${row}`;
}

/** Can key `j` answer `question` ({ tokens, masked })? A hidden key cannot win. */
export function canGuess(question, j) {
  return Boolean(question) && Number.isInteger(j) && j >= 0 && j < question.tokens.length && question.masked[j] !== null;
}

/**
 * How close guess j was, for one query's weights (hidden keys, masked null, do not count):
 * { guess, best, guessWeight, bestWeight, rank, of, exact, text }.
 */
export function verdict(weights, j, tokens, masked = null) {
  const keys = weights.map((w, i) => ({ w, i })).filter(({ i }) => !masked || masked[i] !== null);
  keys.sort((a, b) => b.w - a.w);
  const best = keys[0];
  const rank = keys.findIndex((k) => k.i === j) + 1;
  const guessWeight = weights[j];
  const exact = guessWeight === best.w;
  const text = exact
    ? t("predict.right", { guess: tokens[j], weight: fixed3(guessWeight) })
    : t("predict.wrong", { guess: tokens[j], weight: fixed3(guessWeight), rank, of: keys.length, best: tokens[best.i], bestWeight: fixed3(best.w) });
  return { guess: j, best: best.i, guessWeight, bestWeight: best.w, rank, of: keys.length, exact, text };
}
