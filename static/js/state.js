// The page's one state object, and its round trip through the URL.
//
// Everything the page shows is a function of this object. It is held by the store (store.js)
// and changed only by the named actions of actions.js; nothing lives on `window`.
//
// URL parameters (all optional):
//   chapter   the lesson's chapter (lesson.js; default: steps). The attention chapters (steps,
//             masks) use every parameter below; any other chapter writes only chapter, step and
//             its own parameters (chapterParams), so a chapter may name them as it likes
//   predict   1 = predict first (the learner guesses the strongest key before the weights show)
//   example   id of a built-in example (default: the-cat-ate-its-fish)
//   sentence  a sentence for the real model (sentence mode; see model.js)
//   layer     sentence mode: 0-based layer, or "mean" (over the layers)
//   head      sentence mode: 0-based head, or "mean" (over the layer's heads)
//   merge     sentence mode: 1 = word pieces merged into words (from the softmax step on)
//   model     sentence mode: the model's id from GET /api/models (default: the server's own,
//             all-MiniLM-L6-v2), e.g. smollm2-135m for the decoder
//   off       sentence mode: heads switched off, "layer.head" pairs joined by "," (e.g. 3.5,12.0):
//             their outputs zeroed before W_O (POST /api/ablate); the overview marks them
//   step      the chapter's step: score | scale | mask | softmax | mix for `steps`
//   mask      full | causal
//   lang      the reader's language (i18n.js): kept in the address as it is, never part of a view
//   focus     index of the focused query (0-based; in sentence mode a token of the model's,
//             also when pieces are merged: the word that holds it is focused)
//   tokens    JSON array of labels   } only when the matrices were edited by hand
//   q, k, v   rows joined by ";", numbers by ","  }
//
// Sentence mode (a typed sentence, run by the real model) has no `input`: the server holds
// the model's q, k, v. Its requests and views are in model.js; the steps, the table and the
// scene only need the API response.

import { withLang } from "./i18n.js";
import { parsePick } from "./model.js";
import { STEP_IDS } from "./attention/stages.js";

export const MASKS = ["full", "causal"];
export const MAX_TOKENS = 12;
export const MAX_DIM = 8;
export const MAX_SENTENCE = 40000; // characters kept from a typed sentence (and from the URL): 4,096 tokens of prose

export const ATTENTION_CHAPTERS = ["steps", "masks"]; // the chapters drawn by the attention view (attention/)
const CHAPTER_ID = /^[a-z][a-z0-9-]{0,31}$/;
const MAX_PARAM = 2000; // characters kept from a chapter's own URL parameter
const MODEL_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;

export function createState(defaultExample) {
  return {
    // where in the lesson
    chapter: "steps", // the chapter's id
    chapterStep: null, // the step's id in any chapter but `steps` (which uses `step`)
    chapterParams: {}, // a chapter's own URL parameters (strings), chapters other than steps/masks
    predict: false, // predict first: guess the strongest key before the weights are shown
    // where the input came from
    example: defaultExample, // built-in example id, or null
    sentence: null, // typed sentence (sentence mode: the real model), or null
    layer: 0, // sentence mode: 0-based layer or "mean"
    head: 0, // sentence mode: 0-based head or "mean"
    merge: false, // sentence mode: word pieces merged into words
    modelId: null, // sentence mode: the model picked (an id of GET /api/models), null = the server's own
    off: [], // sentence mode: heads switched off, [[layer, head], …] sorted (inside/headsoff.js shows what changes)
    models: null, // GET /api/models: what the model picker offers, once known
    model: null, // the picked model's facts (GET /api/model or its /api/models entry), once known
    modelLoading: false, // the model's weights are loading (the first sentence)
    heads: null, // the overview for (sentence, mask): { key, data } or { key, error } or { key, pending }
    edited: false, // true once a matrix, token or size was changed by hand
    input: null, // { tokens: [...], q: [[...]], k: [[...]], v: [[...]] }, cells may be raw strings
    // what the user looks at
    step: "score",
    mask: "full",
    focus: 0,
    hover: null, // { row, col } while a table cell is hovered
    // a long sentence's table (lod.js): "blocks", the whole table in blocks, or "tokens", a window of
    // rows around the focus by a window of keys starting at `keys` (null: the same window as the rows)
    lod: { table: "blocks", keys: null },
    // what the server computed for `input`, under both masks (kept when a later request fails)
    result: null, // { full: response, causal: response }
    errors: [], // [{ field: "q" | "k" | "v" | "tokens" | "body", msg }]
    notice: null, // a one-off message, e.g. an unknown example in the URL
    pending: false,
    // what the page holds back or waits for
    withheld: null, // null, or { reason } while nothing derived from the weights may show (a quiz, H)
    holds: [], // every reason holding the weights back now, sorted ("quiz", "numbers", "teacher", …): withheld is set while any does
    guesses: {}, // predict first: question id → the key guessed
    wantWord: null, // focus this word once the tokens are known (an example's opening word)
    hoverToken: null, // a word hovered in the 3D view (sentence mode lists its numbers)
    slow: false, // the model's answer is taking a while ("Running the model…")
    history: "replace", // "push": the next URL write is a view a user would go back to
    // how the page is shown (not in the URL or a room's snapshot)
    presenting: false, // the projector view (classroom/presenter.js): fewer rows and words at once (attention/derive.js)
    role: null, // the page's part in a class beside presenting: "teacher" (the teacher's window), "follower", or null
    narrow: false, // a phone's screen (attention/view.js): fewer words in the 3D view (attention/derive.js)
  };
}

/**
 * The room snapshot: every kind of state a view has (chapter, step, mask, focus, example or
 * sentence, layer, head, merged pieces, hand-set numbers, predict first, a chapter's own
 * parameters), as URL parameters (strings). applySnapshot (actions.js) reads it back.
 */
export function snapshot(state) {
  const params = Object.fromEntries(new URLSearchParams(urlFor(state)));
  // a chapter that has not yet chosen its step sends none (not the steps chapter's "score"):
  // a follower then opens that chapter's first step, as the presenter is about to
  const step = state.chapter === "steps" ? state.step : state.chapterStep;
  const { step: _, ...rest } = params;
  return step ? { ...rest, chapter: state.chapter, step } : { ...rest, chapter: state.chapter };
}

/** The response for the current mask (what the page draws), or null before the first one. */
export function current(state) {
  return state.result ? state.result[state.mask] : null;
}

/** A learner on their own: not the projector, not the teacher's window, not a phone following a room. */
export function alone(state) {
  return !state.presenting && state.role === null;
}

export function tokenCount(state) {
  return state.input ? state.input.tokens.length : 0;
}

const MAX_OFF = 512; // heads switched off at most (POST /api/ablate's limit)

/** "3.5,12.0" → [[3, 5], [12, 0]]: whole numbers ≥ 0, each pair once, sorted; anything else is dropped. */
export function parseOff(text) {
  const seen = new Map();
  for (const part of String(text ?? "").split(/[,\s]+/).slice(0, MAX_OFF)) {
    const m = /^(\d{1,3})\.(\d{1,3})$/.exec(part);
    if (m) seen.set(`${Number(m[1])}.${Number(m[2])}`, [Number(m[1]), Number(m[2])]);
  }
  return [...seen.values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function parseMatrix(text) {
  if (!text) return null;
  const rows = text.split(";").map((row) => row.split(",").map(parseCell));
  return rows.length && rows.every((r) => r.length) ? rows : null;
}

/** A cell as typed: a number when it reads as one, else the raw text (the API names the error). */
export function parseCell(text) {
  const s = String(text).trim();
  if (s !== "" && /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) return Number(s);
  return s;
}

function matrixParam(m) {
  return m.map((row) => row.map((x) => String(x).replace(/[,;]/g, "")).join(",")).join(";");
}

/** Read the URL's query string into the state (unknown or bad values fall back to defaults). */
export function readUrl(state, search) {
  const p = new URLSearchParams(search);
  const chapter = p.get("chapter");
  state.chapter = chapter && CHAPTER_ID.test(chapter) ? chapter : "steps";
  state.predict = p.get("predict") === "1";
  if (!ATTENTION_CHAPTERS.includes(state.chapter)) {
    // another chapter: its step and its own parameters, nothing of the attention view
    state.chapterStep = p.get("step")?.slice(0, 64) ?? null;
    state.chapterParams = {};
    for (const [key, value] of p) {
      if (key !== "chapter" && key !== "step" && key !== "predict" && key !== "lang") state.chapterParams[key] = value.slice(0, MAX_PARAM);
    }
    return;
  }
  if (state.chapter === "masks") state.chapterStep = p.get("step")?.slice(0, 64) ?? null;
  const step = p.get("step");
  if (STEP_IDS.includes(step)) state.step = step;
  const mask = p.get("mask");
  if (MASKS.includes(mask)) state.mask = mask;
  const focus = Number.parseInt(p.get("focus") ?? "", 10);
  if (Number.isFinite(focus) && focus >= 0) state.focus = focus;
  const sentence = p.get("sentence");
  if (sentence && sentence.trim()) {
    state.sentence = sentence.slice(0, MAX_SENTENCE);
    state.example = null;
    const layer = parsePick(p.get("layer"));
    const head = parsePick(p.get("head"));
    if (layer !== null) state.layer = layer;
    if (head !== null) state.head = head;
    state.merge = p.get("merge") === "1";
    const model = p.get("model");
    state.modelId = model && MODEL_ID.test(model) ? model : null;
    state.off = parseOff(p.get("off"));
  }
  const example = p.get("example");
  if (example) {
    state.example = example;
    if (!sentence) state.sentence = null;
  }
  const q = parseMatrix(p.get("q"))?.slice(0, MAX_TOKENS);
  const k = parseMatrix(p.get("k"))?.slice(0, MAX_TOKENS);
  const v = parseMatrix(p.get("v"))?.slice(0, MAX_TOKENS);
  if (q && k && v) {
    let tokens = null;
    try {
      const parsed = JSON.parse(p.get("tokens") ?? "null");
      if (Array.isArray(parsed)) tokens = parsed.map((t) => String(t).slice(0, 100));
    } catch {
      tokens = null;
    }
    if (!tokens || tokens.length !== q.length) tokens = q.map((_, i) => `t${i}`);
    state.input = { tokens, q, k, v };
    state.edited = true;
    state.sentence = null; // hand-set numbers win over a sentence
  }
}

/** The query string that reproduces the current view. */
export function urlFor(state) {
  const p = new URLSearchParams();
  if (state.chapter !== "steps") p.set("chapter", state.chapter);
  if (!ATTENTION_CHAPTERS.includes(state.chapter)) {
    if (state.chapterStep) p.set("step", state.chapterStep);
    for (const [key, value] of Object.entries(state.chapterParams)) p.set(key, String(value));
    return "?" + p.toString();
  }
  if (state.predict) p.set("predict", "1");
  if (state.sentence) {
    p.set("sentence", state.sentence);
    p.set("layer", String(state.layer));
    p.set("head", String(state.head));
    if (state.merge) p.set("merge", "1");
    if (state.modelId) p.set("model", state.modelId);
    if (state.off.length) p.set("off", state.off.map(([l, h]) => `${l}.${h}`).join(","));
  } else if (state.example) p.set("example", state.example);
  p.set("step", state.chapter === "steps" ? state.step : (state.chapterStep ?? state.step));
  p.set("mask", state.mask);
  p.set("focus", String(state.focus));
  if (state.edited && state.input && !state.sentence) {
    p.set("tokens", JSON.stringify(state.input.tokens));
    p.set("q", matrixParam(state.input.q));
    p.set("k", matrixParam(state.input.k));
    p.set("v", matrixParam(state.input.v));
  }
  return "?" + p.toString();
}

/**
 * Put the view in the address bar. `push`: a view a user would go back to (another chapter,
 * example ↔ sentence) gets a history entry of its own; every other change replaces the entry.
 */
export function writeUrl(state, push = false) {
  const query = withLang(urlFor(state)); // ?lang= is the reader's, never part of a view (i18n.js)
  if (query === window.location.search) return;
  if (push) window.history.pushState(null, "", window.location.pathname + query);
  else window.history.replaceState(null, "", window.location.pathname + query);
}
