// Every change of the page's state, by name (store.js runs them; state.js describes the fields).
// An action returns false when it changed nothing, so nothing is redrawn. Actions only change
// the state: requests, timers and the DOM are the effects' business (attention/source.js,
// lesson.js, main.js), which call these.

import { ANIMAL, ANIMAL_VIEW, offers } from "./model.js";
import { withRows } from "./lod.js";
import { ATTENTION_CHAPTERS, createState, MASKS, MAX_SENTENCE, readUrl } from "./state.js";
import { STEP_IDS } from "./attention/stages.js";

/** The page's name of a reason the classroom holds the weights back for (withhold). */
const PAGE_REASON = { numbers: "hidden", teacher: "hidden" };

/** Where an example opens when nothing names a focus: the lesson walks through "its". */
export const OPENING_WORD = { "the-cat-ate-its-fish": "its" };

const tokenCount = (state) => (state.result?.full ?? state.result?.causal)?.tokens.length ?? state.input?.tokens.length ?? null;
/** Whether the page can show `mask` for the answer it has (or will ask for: a mask left for later). */
const hasMask = (state, mask) => !state.result || offers(state.result, mask);
const push = (state, on) => {
  if (on) state.history = "push";
};
const clampFocus = (state) => {
  const n = tokenCount(state);
  if (n) state.focus = Math.max(0, Math.min(state.focus, n - 1));
};

export const actions = {
  // ---- where in the lesson ------------------------------------------------------------------

  /** Open chapter `id` at step `chapterStep` with a chapter's own `params` (lesson.js). */
  enterChapter(state, id, chapterStep, params, { history = false } = {}) {
    state.chapter = id;
    state.chapterStep = id === "steps" ? null : chapterStep;
    state.chapterParams = ATTENTION_CHAPTERS.includes(id) ? {} : { ...(params ?? {}) };
    push(state, history);
  },

  /** A step of the chapter on screen (for `steps`, the attention view's step). */
  setChapterStep(state, id, { history = false } = {}) {
    if (state.chapter === "steps") return false;
    if (state.chapterStep === id && !history) return false;
    state.chapterStep = id;
    push(state, history);
  },

  setChapterParams(state, params, { history = false } = {}) {
    state.chapterParams = { ...params };
    push(state, history);
  },

  /** The attention view at `view` = { step, mask? } (an attention chapter's step). */
  showAttention(state, view, { keepMask = false, history = false } = {}) {
    if (STEP_IDS.includes(view.step)) state.step = view.step;
    if (!keepMask && MASKS.includes(view.mask) && hasMask(state, view.mask)) state.mask = view.mask;
    push(state, history);
  },

  setMask(state, mask) {
    if (!MASKS.includes(mask) || mask === state.mask) return false;
    if (!hasMask(state, mask)) return false; // a decoder has no full mask
    state.mask = mask;
  },

  /** Focus the model's token `i` (the page works out which word holds it). */
  setFocus(state, i) {
    const n = tokenCount(state);
    if (!Number.isInteger(i) || i < 0 || (n !== null && i >= n)) return false;
    if (i === state.focus && !state.hover) return false;
    state.focus = i;
    state.hover = null;
  },

  /**
   * A long sentence's table: the whole of it in blocks ("blocks"), or a window of tokens ("tokens")
   * whose keys start at `keys` (null: the rows' own window, around the focus).
   */
  lodTable(state, table, keys = null) {
    if (table !== "blocks" && table !== "tokens") return false;
    if (state.lod.table === table && state.lod.keys === keys) return false;
    state.lod = { table, keys: table === "tokens" ? keys : null };
    state.hover = null;
  },

  setHover(state, cell) {
    const same = cell && state.hover && cell.row === state.hover.row && cell.col === state.hover.col;
    if (same || (!cell && !state.hover)) return false;
    state.hover = cell;
  },

  setHoverToken(state, i) {
    if (state.hoverToken === i) return false;
    state.hoverToken = i;
  },

  setMerge(state, on) {
    if (state.merge === Boolean(on)) return false;
    state.merge = Boolean(on);
    state.hover = null;
  },

  setPick(state, layer, head) {
    if (layer === null || head === null || (layer === state.layer && head === state.head)) return false;
    state.layer = layer;
    state.head = head;
  },

  /** The projector view on or off (classroom/presenter.js, through pageview.js). */
  setPresenting(state, on) {
    if (state.presenting === Boolean(on)) return false;
    state.presenting = Boolean(on);
  },

  /** The page's part in a class beside presenting (classroom/, through pageview.js): "teacher" (the
   *  teacher's window), "follower", or null (a follower exploring on its own is a learner alone). */
  setRole(state, role) {
    const next = ["teacher", "follower"].includes(role) ? role : null;
    if (state.role === next) return false;
    state.role = next;
  },

  /** A phone's screen, or a wider one (attention/view.js follows the screen's width). */
  setNarrow(state, on) {
    if (state.narrow === Boolean(on)) return false;
    state.narrow = Boolean(on);
  },

  // ---- predict first and withholding ----------------------------------------------------------

  setPredict(state, on) {
    if (state.predict === Boolean(on)) return false;
    state.predict = Boolean(on);
  },

  /** Predict first: key `j` guessed for question `id`. */
  guess(state, id, j) {
    state.guesses = { ...state.guesses, [id]: j };
  },

  forgetGuesses(state) {
    state.guesses = {};
  },

  /**
   * Hold the weights back for `reason` (`on`), or stop holding them for it: nothing derived from
   * them shows while any reason holds (a class quiz, the teacher's H, a follower's hidden screen).
   * state.withheld.reason is what the page says: "quiz" while a quiz waits, else the first
   * reason under its page name (the classroom's "numbers" and "teacher" are "hidden").
   */
  withhold(state, reason = "quiz", on = true) {
    const why = String(reason);
    const holds = on ? [...new Set([...state.holds, why])].sort() : state.holds.filter((r) => r !== why);
    const first = holds.includes("quiz") ? "quiz" : holds[0];
    const shown = first === undefined ? null : (PAGE_REASON[first] ?? first);
    if (holds.join(" ") === state.holds.join(" ") && shown === (state.withheld?.reason ?? null)) return false;
    state.holds = holds;
    state.withheld = shown === null ? null : { reason: shown };
  },

  /** Every reason dropped: the weights show again. */
  release(state) {
    if (!state.withheld && !state.holds.length) return false;
    state.holds = [];
    state.withheld = null;
  },

  // ---- sources: an example, a typed sentence, hand-set numbers --------------------------------

  /** A built-in example arrived; `focus` (a number) starts there, `wantWord` names the word to focus once computed. */
  exampleLoaded(state, ex, { keepMask = false, wantWord = undefined, focus = null, history = false } = {}) {
    if (focus !== null) state.focus = focus;
    push(state, history);
    state.example = ex.id;
    state.sentence = null;
    state.edited = false;
    state.notice = null;
    state.input = { tokens: ex.tokens, q: ex.q, k: ex.k, v: ex.v };
    if (!keepMask) state.mask = ex.mask;
    if (wantWord !== undefined) state.wantWord = wantWord;
    state.focus = Math.min(state.focus, ex.tokens.length - 1);
    state.hover = null;
    state.result = null;
    state.heads = null;
  },

  /** A typed sentence; `fresh` (typed or clicked, not from a URL) starts on its first word. */
  sentenceChosen(state, text, { fresh = false, history = false } = {}) {
    const wasSentence = Boolean(state.sentence);
    state.sentence = text.slice(0, MAX_SENTENCE);
    state.example = null;
    state.edited = false;
    state.input = null;
    state.notice = null;
    if (fresh) {
      // the first sentence opens on layer 0, head 0 (the animal sentence on its own head); a
      // later one keeps the head being looked at, to compare sentences
      const animal = text.trim() === ANIMAL;
      if (animal || !wasSentence) {
        state.layer = animal ? ANIMAL_VIEW.layer : 0;
        state.head = animal ? ANIMAL_VIEW.head : 0;
      }
      state.focus = 1; // the first word after [CLS]
      state.wantWord = animal ? ANIMAL_VIEW.word : null;
      state.lod = { table: "blocks", keys: null }; // a long one opens on its whole table
    }
    state.hover = null;
    state.result = null;
    state.errors = [];
    state.heads = null;
    push(state, history);
  },

  /** The animal sentence opened from a URL that names no head: its own head and word. */
  animalView(state, { word = true } = {}) {
    state.layer = ANIMAL_VIEW.layer;
    state.head = ANIMAL_VIEW.head;
    if (word) state.wantWord = ANIMAL_VIEW.word;
  },

  /** Hand-set numbers from a link or a room's view (`example`: the example they started from). */
  numbersSet(state, input, example) {
    state.input = input;
    state.edited = true;
    state.sentence = null;
    state.example = example;
    state.focus = Math.min(state.focus, input.tokens.length - 1);
    state.hover = null;
    state.result = null;
    state.heads = null;
  },

  /** Hand-set numbers edited (editor.js): `removed` is the index of a removed word. */
  inputEdited(state, input, { removed = null } = {}) {
    const before = state.input?.tokens.length ?? 0;
    state.input = input;
    state.edited = true;
    state.notice = null;
    const n = input.tokens.length;
    if (removed !== null && n === before - 1 && removed < state.focus) state.focus -= 1; // the same word stays focused
    state.focus = Math.min(state.focus, n - 1);
    state.hover = null;
  },

  /** Cells that are not numbers, words without a name: refused before asking the server. */
  refused(state, errors) {
    state.pending = false;
    state.errors = errors;
  },

  asked(state) {
    state.pending = true;
  },

  slowAnswer(state) {
    if (!state.pending || state.slow) return false;
    state.slow = true;
  },

  /** The server's answer for the attention view (or its errors: the last good answer stays). */
  received(state, outcome) {
    state.pending = false;
    state.slow = false;
    if (!outcome.ok) {
      state.errors = outcome.errors;
      return;
    }
    state.result = outcome.data;
    state.errors = [];
    if (!hasMask(state, state.mask)) state.mask = "causal"; // a decoder (GPT-2) has only its own mask
    const tokens = (state.result.full ?? state.result.causal).tokens;
    if (state.wantWord) {
      const i = tokens.indexOf(state.wantWord);
      if (i >= 0) state.focus = i;
      state.wantWord = null;
    }
    clampFocus(state);
    if (state.hover && (state.hover.row >= tokens.length || state.hover.col >= tokens.length)) state.hover = null;
  },

  /**
   * The mask an answer left for later (`result.later`) has come: `outcome` of sentenceCausal for
   * `result` (dropped if another answer has replaced it). If it failed, the page goes back to the
   * mask it has, and says why.
   */
  laterReceived(state, result, outcome) {
    if (state.result !== result) return false;
    const { later, ...answers } = result;
    if (outcome.ok) {
      state.result = { ...answers, [later]: outcome.data };
      return;
    }
    state.result = answers;
    state.errors = outcome.errors;
    if (!state.result[state.mask]) state.mask = later === "causal" ? "full" : "causal";
  },

  /**
   * More rows of a long sentence's answer `result` (attention/source.js fetchRows): `outcome` of
   * api.js sentenceRows, dropped if another answer has replaced it; a refusal says why.
   */
  rowsReceived(state, result, outcome) {
    if (state.result !== result) return false;
    if (!outcome.ok) {
      state.errors = outcome.errors;
      return;
    }
    state.result = { ...result, causal: withRows(result.causal, outcome.frame, state.focus) };
  },

  setNotice(state, text) {
    if (state.notice === text) return false;
    state.notice = text;
  },

  modelKnown(state, info) {
    // a late answer about a model no longer picked changes nothing. GET /api/model answers about the
    // server's default model and names no id; state.modelId is null for the default too
    const about = info.id && !state.models?.find((m) => m.id === info.id)?.default ? info.id : null;
    if (about !== state.modelId) return false;
    state.model = info;
  },

  /** GET /api/models answered: the models the picker offers. */
  modelsListed(state, models) {
    state.models = models;
  },

  /**
   * The model picker chose `id` (null or the default's id: the server's own model), with its
   * facts `info` when known: a new model's answer replaces the old one's, at `view`'s layer and
   * head (a room's snapshot), else at layer 0, head 0.
   */
  modelChosen(state, id, info = null, view = null) {
    const picked = id && !state.models?.find((m) => m.id === id)?.default ? id : null;
    if (picked === state.modelId) return false;
    state.modelId = picked;
    state.model = info;
    state.result = null;
    state.heads = null;
    state.layer = view?.layer ?? 0;
    state.head = view?.head ?? 0;
    state.mask = info?.causal ? "causal" : state.mask;
    state.off = []; // another model has other layers and heads
    push(state, true);
  },

  /** Sentence mode: switch head `head` of layer `layer` off, or back on (inside/headsoff.js). */
  toggleHeadOff(state, layer, head) {
    if (!Number.isInteger(layer) || !Number.isInteger(head) || layer < 0 || head < 0) return false;
    const on = state.off.some(([l, h]) => l === layer && h === head);
    const next = on ? state.off.filter(([l, h]) => l !== layer || h !== head) : [...state.off, [layer, head]];
    state.off = next.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  },

  /** Every head back on. */
  clearHeadsOff(state) {
    if (!state.off.length) return false;
    state.off = [];
  },

  modelLoading(state, on) {
    if (state.modelLoading === on) return false;
    state.modelLoading = on;
  },

  /** The overview of every head: { key, pending } | { key, data } | { key, error } | null. */
  headsState(state, heads) {
    state.heads = heads;
  },

  /** The URL was written: the next change replaces its history entry (no redraw). */
  urlWritten(state) {
    state.history = "replace";
    return false;
  },

  // ---- the room snapshot --------------------------------------------------------------------

  /**
   * Take every kind of state from `snap` (state.js snapshot(), or any URL query): what it names
   * wins over what the page would choose by itself (an example's opening word, a sentence's
   * first word). Loading a new source is the effect's part (attention/source.js follow()).
   */
  applySnapshot(state, snap, defaultExample) {
    const query = typeof snap === "string" ? snap : new URLSearchParams(snap).toString();
    const next = createState(defaultExample);
    readUrl(next, query);
    const keepMask = new URLSearchParams(query).has("mask");
    state.chapter = next.chapter;
    state.chapterStep = next.chapterStep;
    state.chapterParams = next.chapterParams;
    state.predict = next.predict;
    if (ATTENTION_CHAPTERS.includes(next.chapter)) {
      Object.assign(state, { step: next.step, focus: next.focus, hover: null, layer: next.layer, head: next.head, merge: next.merge, off: next.off });
      if (keepMask) state.mask = next.mask;
      state.wantWord = null;
    }
  },
};
