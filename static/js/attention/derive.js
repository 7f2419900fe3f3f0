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
import { isLong } from "../lod.js";
import { deriveLong } from "./longview.js";

export const SCENE_MAX = 32; // the most tokens the 3D view draws at once (a window around the focus)
export const TABLE_MAX = 64; // the most rows and columns the table draws at once (the same idea)
// The projector view (state.presenting): as much as can be read from the back of a room, the
// table's digits no smaller than classroom/fit.js's floor beside the step's words, for every step
// of the attention chapters at 16:9 (the projector's root size is 1.5vw, so 1280 and 1920 alike).
export const PRESENT_SCENE_MAX = 16;
export const PRESENT_TABLE_MAX = 7;
// the masks side by side, two tables abreast and their change under them: up to PRESENT_COMPARE_MAX
// rows whole (the lesson's example), a longer sentence (longer words) a window of PRESENT_COMPARE_WINDOW
export const PRESENT_COMPARE_MAX = 5;
export const PRESENT_COMPARE_WINDOW = 4;
// A phone (state.narrow, the width app.css lays out in one column): its 3D view's words, each whole
export const PHONE_MEDIA = "(max-width: 600px)";
export const PHONE_SCENE_MAX = 16;
// A long sentence's window (attention/longview.js) shares the 3D view with its blocks of keys: fewer words
export const LONG_SCENE_MAX = 16;
export const LONG_SCENE_SMALL = 10; // on a phone and in the projector view

/** The first of `count` rows shown out of `rows`, centred on `focus` where the ends allow. */
const windowStart = (rows, count, focus) => Math.min(rows - count, Math.max(0, focus - Math.floor(count / 2)));

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
  if (isLong(data)) {
    // a long sentence's summary (lod.js): a window of its rows, its table in blocks (attention/longview.js)
    const sceneMax = state.presenting || state.narrow ? LONG_SCENE_SMALL : LONG_SCENE_MAX;
    const tableRows = state.presenting ? PRESENT_TABLE_MAX : TABLE_MAX;
    return deriveLong(state, base, data, { sceneMax, tableRows, drawingFor, evenScene });
  }

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

  // the table: every row, or a window of TABLE_MAX (the projector: PRESENT_TABLE_MAX) around the focus
  const tableMax = state.presenting ? PRESENT_TABLE_MAX : TABLE_MAX;
  const from = rows > tableMax ? windowStart(rows, tableMax, focusRow) : 0;
  const tableWindow = rows > tableMax ? { from, to: from + tableMax } : null;
  // the masks compared (at most COMPARE_MAX rows): in the projector view, a window of PRESENT_COMPARE_WINDOW
  const compareFrom = windowStart(rows, PRESENT_COMPARE_WINDOW, focusRow);
  const compareWindow = state.presenting && rows > PRESENT_COMPARE_MAX ? { from: compareFrom, to: compareFrom + PRESENT_COMPARE_WINDOW } : null;

  // the 3D view: every row, or a window of SCENE_MAX (the projector's, a phone's: fewer) around the focus
  const sceneMax = state.presenting ? PRESENT_SCENE_MAX : state.narrow ? PHONE_SCENE_MAX : SCENE_MAX;
  let offset = 0;
  let sceneData = shown;
  let sceneWindow = null;
  if (rows > sceneMax) {
    offset = windowStart(rows, sceneMax, focusRow);
    sceneData = sliceView(shown, offset, offset + sceneMax);
    sceneWindow = { n: rows, count: sceneMax, from: offset + 1, to: offset + sceneMax, tableAll: !tableWindow };
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
    compare: withheld ? null : { full: state.result.full, causal: state.result.causal, merged: sentenceMode && state.merge, window: compareWindow },
    masks: { full: !offers(state.result, "full"), causal: !offers(state.result, "causal") }, // disabled: the answer has no such mask
  };
}
