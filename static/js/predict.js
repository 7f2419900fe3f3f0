// Predict, then reveal (issue 7). With "predict first" on, the page holds the weights back at
// the softmax and mix steps until the learner has picked the key the focused query will attend
// to most (a word button, or a column of the table); then it reveals the weights and says how
// close the guess was. main.js draws it; this module keeps the switch, the guesses and the
// verdicts, and is the seam for the classroom's live quiz:
//
//   isPredictFirst() / setPredictFirst(on)  the switch (the page mirrors it in the URL: predict=1)
//   question()   null, or { id, focus, word, tokens, masked } while the page waits for a guess
//   guess(j)     pick key j for the current question (as a click does); returns the verdict
//   verdict(weightsRow, j, tokens, maskedRow?)
//                { guess, best, guessWeight, bestWeight, rank, of, exact, text } for a guess j
//   onQuestion(cb)  cb(question) each time the page starts waiting for a guess; unsubscribe fn
//   onGuess(cb)     cb({ question, key, verdict? }) after every guess; unsubscribe fn
//   forget()     drop every guess (the next visit to softmax asks again)
//
// A question's id names the view (source, layer/head, mask, focus), so one guess serves both
// the softmax and the mix step of that view.

import { fixed3 } from "./format.js";

let enabled = false;
const guesses = new Map(); // question id → key index
let pending = null; // the question on screen
let changed = () => {}; // main.js: redraw
const questionListeners = new Set();
const guessListeners = new Set();

/** main.js only: how to redraw after a switch or a guess. */
export function setRedraw(fn) {
  changed = fn;
}

export function isPredictFirst() {
  return enabled;
}

export function setPredictFirst(on) {
  if (enabled === Boolean(on)) return;
  enabled = Boolean(on);
  changed();
}

export function guessFor(id) {
  return guesses.has(id) ? guesses.get(id) : null;
}

/** main.js only: the page now waits for a guess on `q` (or on nothing: null). */
export function ask(q) {
  const same = pending && q && pending.id === q.id;
  pending = q;
  if (q && !same) for (const cb of questionListeners) cb(q);
}

export function question() {
  return pending;
}

export function guess(j) {
  if (!pending || !Number.isInteger(j) || j < 0 || j >= pending.tokens.length) return null;
  if (pending.masked && pending.masked[j] === null) return null; // a hidden key cannot win
  const q = pending;
  guesses.set(q.id, j);
  pending = null;
  for (const cb of guessListeners) cb({ question: q, key: j });
  changed();
  return q;
}

export function forget() {
  guesses.clear();
  changed();
}

export function onQuestion(cb) {
  questionListeners.add(cb);
  return () => questionListeners.delete(cb);
}

export function onGuess(cb) {
  guessListeners.add(cb);
  return () => guessListeners.delete(cb);
}

/** How close guess j was, for one query's weights (hidden keys, masked null, do not count). */
export function verdict(weights, j, tokens, masked = null) {
  const keys = weights.map((w, i) => ({ w, i })).filter(({ i }) => !masked || masked[i] !== null);
  keys.sort((a, b) => b.w - a.w);
  const best = keys[0];
  const rank = keys.findIndex((k) => k.i === j) + 1;
  const guessWeight = weights[j];
  const exact = guessWeight === best.w;
  const name = (i) => `“${tokens[i]}”`;
  const text = exact
    ? `You picked ${name(j)}: right, it gets ${fixed3(guessWeight)}, the most of any word.`
    : `You picked ${name(j)}: it gets ${fixed3(guessWeight)} (number ${rank} of ${keys.length}); ` +
      `the most went to ${name(best.i)} (${fixed3(best.w)}).`;
  return { guess: j, best: best.i, guessWeight, bestWeight: best.w, rank, of: keys.length, exact, text };
}
