// What the attention view shows, worked out from the state alone: derive(state) → view.
// Pure: it reads the state and returns a new object (never changes the state; a focus past the
// last word or a hover outside the table is clamped or dropped here, in the view). The
// AttentionView (attention/view.js) draws the result; the chapters' words read it too.
//
// Withholding: while state.withheld is set (a quiz, the teacher's H) or predict first waits
// for a guess, the view holds NOTHING derived from the weights: the weight stages show the
// masked scores (the question's givens), the 3D links are all as wide as each other and carry
// no numbers, the output z, the comparison and the overview of every head are left out.

import { arithmetic } from "../arithmetic.js";
import { identityGroups, mergeView, offers, sliceView } from "../model.js";
import { questionId, verdict } from "../predictfirst.js";
import { drawing } from "../projection.js";
import { current } from "../state.js";
import { stepById } from "./stages.js";

export const SCENE_MAX = 32; // the most tokens the 3D view draws at once (a window around the focus)
export const TABLE_MAX = 64; // the most rows and columns the table draws at once (the same idea)

const drawings = new WeakMap(); // a cache (response → its PCA drawing), not state: the same answer gives the same drawing

/** The PCA drawing of a response's vectors (computed once per response). */
export function drawingFor(data) {
  let d = drawings.get(data);
  if (!d) {
    d = drawing(data);
    drawings.set(data, d);
  }
  return d;
}

/** The 3D view's links while the weights are withheld: every visible key alike, no numbers. */
function evenScene(data, step) {
  const even = data.masked.map((row) => row.map((x) => (x === null ? null : 0.5)));
  return { data: { ...data, even }, step: { ...step, id: "withheld", stage: "even", links: "weight", masked: true, output: false } };
}

export function derive(state) {
  const step = stepById(state.step);
  const sentenceMode = Boolean(state.sentence);
  const data = current(state);
  const base = { step, sentenceMode, data, ready: Boolean(data) && !state.pending, errors: state.errors, notice: state.notice };
  if (!data) return { ...base, shown: null, withheld: state.withheld, question: null };

  const n = data.tokens.length;
  const merged = sentenceMode && state.merge && step.stage === "weights";
  const shown = sentenceMode ? (merged ? mergeView(data, drawingFor(data), state.sentence) : { ...data, drawn: drawingFor(data) }) : data;
  const groups = shown.merged ? shown.merged.groups : identityGroups(shown.tokens.length);
  const focus = Math.min(state.focus, n - 1);
  const focusRow = Math.max(0, groups.findIndex((g) => g.includes(focus)));
  const rows = shown.tokens.length;
  const inTable = (c) => c && c.row < rows && c.col < rows;
  const hover = inTable(state.hover) ? state.hover : null;

  // predict first: at a weight stage the page waits for a guess on the focused word
  let question = null;
  let guessText = null;
  if (state.predict && step.stage === "weights" && !state.withheld) {
    const id = questionId(state, focusRow);
    const guessed = state.guesses[id];
    if (guessed === undefined) {
      question = { id, focus: focusRow, word: shown.tokens[focusRow], tokens: [...shown.tokens], masked: [...shown.masked[focusRow]] };
    } else {
      guessText = verdict(shown.weights[focusRow], guessed, shown.tokens, shown.masked[focusRow]).text;
    }
  }
  const withheld = state.withheld ?? (question ? { reason: "predict" } : null);
  const shownStep = withheld && step.stage === "weights" ? stepById("mask") : step;

  // the table: every row, or a window of TABLE_MAX around the focus
  const from = rows > TABLE_MAX ? Math.min(rows - TABLE_MAX, Math.max(0, focusRow - TABLE_MAX / 2)) : 0;
  const tableWindow = rows > TABLE_MAX ? { from, to: from + TABLE_MAX } : null;

  // the 3D view: every row, or a window of SCENE_MAX around the focus
  let offset = 0;
  let sceneData = shown;
  let sceneWindow = null;
  if (rows > SCENE_MAX) {
    offset = Math.min(rows - SCENE_MAX, Math.max(0, focusRow - Math.floor(SCENE_MAX / 2)));
    sceneData = sliceView(shown, offset, offset + SCENE_MAX);
    sceneWindow = { n: rows, count: SCENE_MAX, from: offset + 1, to: offset + SCENE_MAX };
  }
  const inScene = (c) => (c && c.row - offset >= 0 && c.row - offset < sceneData.tokens.length && c.col - offset >= 0 && c.col - offset < sceneData.tokens.length ? { row: c.row - offset, col: c.col - offset } : null);
  const drawn = withheld ? evenScene(sceneData, shownStep) : { data: sceneData, step: shownStep };
  const scene = { ...drawn, focus: focusRow - offset, hover: inScene(hover), withheld: Boolean(withheld) };

  // the vectors listed under the 3D view (sentence mode): a hovered cell, a hovered word, else the focus
  const tokensOf = (row) => groups[row] ?? [row];
  let inspect = null;
  if (sentenceMode) {
    if (hover) inspect = { query: tokensOf(hover.row), key: tokensOf(hover.col), why: "cell" };
    else if (state.hoverToken !== null && groups[state.hoverToken]) inspect = { query: tokensOf(state.hoverToken), key: null, why: "hover" };
    else inspect = { query: tokensOf(focusRow), key: null, why: "focus" };
  }

  return {
    ...base,
    shown,
    merged,
    groups,
    focus,
    focusRow,
    hover,
    withheld,
    question,
    guessText,
    shownStep,
    wide: sentenceMode && n > 10,
    table: { focus: focusRow, hover, data: shown, step: shownStep, window: tableWindow },
    arithmetic: arithmetic(shownStep, shown, focusRow),
    scene,
    sceneOffset: offset,
    sceneWindow,
    inspect,
    compare: withheld ? null : { full: state.result.full, causal: state.result.causal, merged: sentenceMode && state.merge },
    masks: { full: !offers(state.result, "full"), causal: !offers(state.result, "causal") }, // disabled: the answer has no such mask
  };
}
