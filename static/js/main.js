// Wires the page: one state object, read from the URL, drawn by the table, the lesson panel,
// the 3-D scene and the editor, and recomputed by the server whenever the input changes.
// Two sources: a hand-set example (editable Q, K, V) or a typed sentence, run by the real
// model (sentence mode, sentence.js: layer and head pickers, the overview, merged pieces).
// The lesson (lesson.js) puts chapters around it: `steps` and `masks` are this attention
// view; the other chapters draw themselves. Keys: keys.js. The view for the classroom and
// the exports: hub.js (provided at the end of this file).

import { getExample, Recomputer } from "./api.js";
import { arithmetic } from "./arithmetic.js";
import { el } from "./dom.js";
import { Editor } from "./editor.js";
import { provideView, viewChanged } from "./hub.js";
import { renderInspect } from "./inspect.js";
import { installKeys } from "./keys.js";
import { Lesson } from "./lesson.js";
import { ANIMAL, ANIMAL_VIEW, identityGroups, mergeView, modelInfo, sentenceBothMasks, sliceView } from "./model.js";
import * as predict from "./predict.js";
import { installPredict, renderPredict } from "./predictview.js";
import { renderArithmetic, renderBanner, renderComparison, renderNotes, renderSceneNote, typingErrors } from "./panels.js";
import { drawing } from "./projection.js";
import { Stage } from "./scene/stage.js";
import { SceneView } from "./scene/view.js";
import { SentenceParts } from "./sentence.js";
import { ATTENTION_CHAPTERS, createState, current, MASKS, MAX_SENTENCE, readUrl, urlFor, writeUrl } from "./state.js";
import { STEP_IDS, stepById } from "./steps.js";
import { MatrixTable } from "./table.js";
import { describeView, drawnSignal } from "./viewhub.js";
import "./classroom/index.js";
import "./export/index.js";

const $ = (id) => document.getElementById(id);
const root = $("app");
const DEFAULT_EXAMPLE = root.dataset.defaultExample;
const drawn = drawnSignal(root); // applyView() resolves once the page is drawn
const settle = () => drawn.settle();
/** Where an example opens when the URL names no focus: the lesson walks through "its". */
const OPENING_WORD = { "the-cat-ate-its-fish": "its" };
const state = createState(DEFAULT_EXAMPLE);
const urlParams = new URLSearchParams(window.location.search);
readUrl(state, window.location.search);

let revision = 0;
let lastStep = null;
const SCENE_MAX = 32; // the most tokens the 3D view draws at once (a window around the focus)
const TABLE_MAX = 64; // the most rows and columns the table draws at once (the same idea)
let shownGroups = []; // per row of the shown table: the model's token indices in it
let shownView = null; // the response as shown (pieces merged or not)
let sceneOffset = 0; // the first shown row the 3D view draws
let hoverToken = null; // a word hovered in the 3D view (sentence mode lists its numbers)
let wantWord = null; // focus this word once the tokens are known
let sourceStarted = false; // the attention view's source has been asked for (example or sentence)
let pushNext = false; // the next URL write is a view a user would go back to (a history entry)
let lastScene = null; // what the 3D view was last given (for hover updates)
const drawings = new WeakMap(); // response → its PCA drawing
const inSentenceMode = () => Boolean(state.sentence);
const attentionOn = () => ATTENTION_CHAPTERS.includes(state.chapter);
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;

// ---- the parts of the page -------------------------------------------------------------

const table = new MatrixTable($("matrix"), { focus: (i) => setFocus(i), hover: (cell) => setHover(cell) });

let removing = null; // the word being removed (clicked in the editor), to keep the focus on its word
$("editor-grids").addEventListener(
  "click",
  (e) => {
    const btn = e.target.closest("button[data-remove]");
    removing = btn ? { index: Number(btn.dataset.remove), n: state.input?.tokens.length ?? 0 } : null;
  },
  true,
);

const editor = new Editor($("editor-grids"), { dk: $("dk-input"), dv: $("dv-input"), add: $("add-token") }, state, (structural) => {
  state.edited = true;
  state.notice = null;
  const n = state.input.tokens.length;
  if (removing && n === removing.n - 1 && removing.index < state.focus) state.focus -= 1; // the same word stays focused
  removing = null;
  state.focus = Math.min(state.focus, n - 1);
  if (structural) editor.build();
  renderNotes(state);
  recompute(structural);
});

let scene = null;
try {
  scene = new SceneView(
    $("scene"),
    SCENE_MAX,
    (i) => setFocus(i + sceneOffset),
    (i) => {
      hoverToken = i === null ? null : i + sceneOffset;
      renderVectors();
    },
  );
} catch (err) {
  $("scene").append(noWebGl(err));
}
$("reset-view").addEventListener("click", () => scene?.resetView());

function noWebGl(err) {
  console.warn("3D view unavailable:", err);
  return el("p", { className: "scene-fallback" }, `The 3D view needs WebGL, which this browser has turned off (${err.message}). The numbers beside it are all there.`);
}

let slowTimer = 0; // "Running the model…" shows only when an answer takes a while
let slow = false;

function onOutcome(outcome) {
  state.pending = false;
  clearTimeout(slowTimer);
  slow = false;
  if (outcome.ok) {
    state.result = outcome.data;
    state.errors = [];
    if (!state.result[state.mask]) state.mask = "causal"; // a decoder (GPT-2) has only its own mask
    if (wantWord) {
      const i = (outcome.data.full ?? outcome.data.causal).tokens.indexOf(wantWord);
      if (i >= 0) state.focus = i;
      wantWord = null;
    }
  } else {
    state.errors = outcome.errors; // the last good result stays drawn
  }
  render();
}

const recomputer = new Recomputer(onOutcome);
const modelRecomputer = new Recomputer(onOutcome, 0, sentenceBothMasks);
// the model's status, asked at once: it names the model and its layers and heads
const modelKnown = modelInfo(false).then((info) => {
  state.model = info;
  return info;
});
const sentence = new SentenceParts(state, { render: () => render(), pick: (layer, head, from) => setPick(layer, head, from), known: modelKnown });

$("merge-toggle").addEventListener("change", (e) => {
  state.merge = e.target.checked;
  state.hover = null;
  render();
});

function setPick(layer, head, from = null) {
  if (layer === null || head === null || (layer === state.layer && head === state.head)) return;
  state.layer = layer;
  state.head = head;
  recompute(true);
  render();
  // a thumbnail far below the view: bring the view that changed into sight (issue 11, item 7)
  if (from === "overview") $("workspace").scrollIntoView({ block: "start", behavior: reducedMotion ? "auto" : "smooth" });
}

/** The PCA drawing of a response's vectors (computed once per response). */
function drawingFor(data) {
  let d = drawings.get(data);
  if (!d) {
    d = drawing(data);
    drawings.set(data, d);
  }
  return d;
}

function recompute(immediate = false) {
  if (inSentenceMode()) {
    state.pending = true;
    root.dataset.ready = "false";
    const req = { sentence: state.sentence, layer: state.layer, head: state.head, kind: state.model?.kind ?? "bert" };
    modelRecomputer.schedule(req, immediate);
    clearTimeout(slowTimer);
    slowTimer = setTimeout(() => {
      slow = state.pending;
      if (slow) render();
    }, 400);
    return;
  }
  if (!state.input) return;
  const errors = typingErrors(state.input);
  if (errors.length) {
    recomputer.cancel();
    state.pending = false;
    state.errors = errors;
    render();
    return;
  }
  state.pending = true;
  root.dataset.ready = "false";
  recomputer.schedule(state.input, immediate);
}

// ---- the lesson, steps, mask, focus ------------------------------------------------------

const lesson = new Lesson(state, {
  attention(view, { push = false, compare = false, keepMask = false } = {}) {
    root.dataset.layout = "attention";
    $("chapter-view").hidden = true;
    if (STEP_IDS.includes(view.step)) state.step = view.step;
    if (!keepMask && MASKS.includes(view.mask) && !(state.result && !state.result[view.mask])) state.mask = view.mask;
    pushNext ||= push;
    if (!sourceStarted) startSource();
    render();
    sentence.fetchHeads();
    if (compare) $("compare").scrollIntoView({ block: "start", behavior: reducedMotion ? "auto" : "smooth" });
  },
  leaveAttention() {
    root.dataset.layout = "chapter";
    $("chapter-view").hidden = false;
    $("numpy").hidden = true;
  },
  changed({ push = false } = {}) {
    pushNext ||= push;
    render();
  },
  ready(flag) {
    root.dataset.ready = String(flag);
    root.dataset.chapter = state.chapter;
    root.dataset.step = lesson.stepId() ?? "";
    root.dataset.rev = String(++revision);
    if (flag) settle();
  },
  makeStage(container) {
    try {
      return new Stage(container);
    } catch (err) {
      container.append(noWebGl(err));
      return null;
    }
  },
});

function setMask(mask) {
  if (!MASKS.includes(mask) || mask === state.mask || !attentionOn()) return;
  if (state.result && !state.result[mask]) return; // a decoder has no full mask
  state.mask = mask;
  render();
  sentence.fetchHeads();
}

/** Focus row `i` of the shown table (a word when pieces are merged: its first token). */
function setFocus(i) {
  if (!attentionOn() || i < 0 || i >= shownGroups.length) return;
  state.focus = shownGroups[i][0];
  state.hover = null;
  render();
}

function setHover(cell) {
  const same = cell && state.hover && cell.row === state.hover.row && cell.col === state.hover.col;
  if (same || (!cell && !state.hover)) return;
  state.hover = cell;
  table.highlight(cell);
  renderVectors();
  if (scene && lastScene) scene.update({ ...lastScene, hover: sceneHover(cell) });
}

/** A hovered cell in the 3D view's window, or null. */
function sceneHover(cell) {
  if (!cell || !lastScene) return null;
  const n = lastScene.data.tokens.length;
  const row = cell.row - sceneOffset;
  const col = cell.col - sceneOffset;
  return row >= 0 && row < n && col >= 0 && col < n ? { row, col } : null;
}

for (const btn of [$("mask-full"), $("mask-causal")]) btn.addEventListener("click", () => setMask(btn.dataset.mask));

installKeys({
  step: (d) => lesson.move(d),
  walk: (d) => lesson.walk(d),
  mask: () => setMask(state.mask === "full" ? "causal" : "full"),
  focus: (i) => setFocus(i),
  escape: () => {
    const open = !$("contents").hidden;
    if (open) lesson.toggleContents(false);
    return open;
  },
});

installPredict(state, () => render());

// ---- sources: a built-in example or a typed sentence -----------------------------------

const knownExamples = new Set([...$("example-select").options].map((o) => o.value).filter(Boolean));

async function loadExample(id, keepMask) {
  sourceStarted = true;
  let ex;
  try {
    if (!knownExamples.has(id)) throw new Error("unknown example");
    ex = await getExample(id);
  } catch {
    state.notice = `There is no example called “${id}”; showing the default one.`;
    if (id !== DEFAULT_EXAMPLE) return loadExample(DEFAULT_EXAMPLE, keepMask);
    render();
    return;
  }
  state.example = ex.id;
  state.sentence = null;
  sentence.stopHeads();
  modelRecomputer.cancel();
  state.edited = false;
  state.input = { tokens: ex.tokens, q: ex.q, k: ex.k, v: ex.v };
  if (!keepMask) state.mask = ex.mask;
  afterNewInput();
}

/**
 * Run the real model on a sentence. `fresh`: typed or clicked (not from the URL), so the view
 * starts on the first word, and on layer 0, head 0 coming from an example, or, for the animal
 * sentence, on the head where "it" finds "animal".
 */
function loadSentence(text, fresh) {
  sourceStarted = true;
  const wasSentence = inSentenceMode();
  state.sentence = text.slice(0, MAX_SENTENCE);
  state.example = null;
  state.edited = false;
  state.input = null;
  recomputer.cancel();
  if (fresh) {
    // the first sentence opens on layer 0, head 0 (the animal sentence on its own head); a
    // later one keeps the head being looked at, to compare sentences
    const animal = text.trim() === ANIMAL;
    if (animal || !wasSentence) {
      state.layer = animal ? ANIMAL_VIEW.layer : 0;
      state.head = animal ? ANIMAL_VIEW.head : 0;
    }
    state.focus = 1; // the first word after [CLS]
    wantWord = animal ? ANIMAL_VIEW.word : null;
  }
  state.hover = null;
  state.result = null;
  state.errors = [];
  state.heads = null;
  editor.build();
  renderNotes(state);
  render();
  sentence.ensureModel();
  recompute(true);
  sentence.fetchHeads();
}

function afterNewInput() {
  state.focus = Math.min(state.focus, state.input.tokens.length - 1);
  state.hover = null;
  state.result = null;
  editor.build();
  renderNotes(state);
  recompute(true);
}

/** The attention view's first source, from the URL (or the default example). */
function startSource() {
  sourceStarted = true;
  if (state.input) {
    afterNewInput();
  } else if (state.sentence) {
    if (!urlParams.has("layer") && !urlParams.has("head") && state.sentence.trim() === ANIMAL) {
      state.layer = ANIMAL_VIEW.layer;
      state.head = ANIMAL_VIEW.head;
      if (!urlParams.has("focus")) wantWord = ANIMAL_VIEW.word;
    } else if (!urlParams.has("focus")) state.focus = 1;
    $("sentence-input").value = state.sentence;
    loadSentence(state.sentence, false);
  } else {
    const id = state.example || DEFAULT_EXAMPLE;
    if (!urlParams.has("focus")) wantWord = OPENING_WORD[id] ?? null;
    loadExample(id, urlParams.has("mask") || state.chapter !== "steps"); // masks: its step set the mask
  }
}

$("example-select").addEventListener("change", (e) => {
  const id = e.target.value;
  state.notice = null;
  if (!id) return;
  state.focus = 0;
  wantWord = OPENING_WORD[id] ?? null;
  pushNext = true;
  loadExample(id, state.chapter !== "steps");
});
$("source-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("sentence-input").value;
  state.notice = null;
  if (!text.trim()) {
    state.notice = text
      ? "That sentence is only spaces: type some words for the model to read."
      : "Type a sentence first: the model needs some words to read.";
    render();
    return;
  }
  pushNext = true;
  if (!attentionOn()) lesson.go("steps", null, null, { push: true });
  loadSentence(text, true);
});
$("animal-go").addEventListener("click", () => {
  state.notice = null;
  $("sentence-input").value = ANIMAL;
  pushNext = true;
  if (!attentionOn()) lesson.go("steps", null, null, { push: true });
  loadSentence(ANIMAL, true);
});
$("sentence-input").addEventListener("focus", () => {
  // start loading the weights while the user types (answers at once; loads in the background)
  if (state.model && !state.model.loaded && !state.model.loading) modelInfo(true).catch(() => {});
});

// ---- drawing ---------------------------------------------------------------------------

/** The hovered or focused row's vectors, every number (sentence mode). */
function renderVectors() {
  const box = $("vector-info");
  const data = current(state);
  box.hidden = !inSentenceMode() || !data;
  if (box.hidden) return;
  const tokensOf = (row) => shownGroups[row] ?? [row];
  if (state.hover) {
    renderInspect(box, data, { query: tokensOf(state.hover.row), key: tokensOf(state.hover.col), why: "cell" });
  } else if (hoverToken !== null && shownGroups[hoverToken]) {
    renderInspect(box, data, { query: tokensOf(hoverToken), key: null, why: "hover" });
  } else {
    const row = shownGroups.findIndex((g) => g.includes(state.focus));
    renderInspect(box, data, { query: tokensOf(Math.max(0, row)), key: null, why: "focus" });
  }
}

function render() {
  if (!attentionOn()) {
    writeUrl(state, pushNext);
    pushNext = false;
    root.dataset.chapter = state.chapter;
    viewChanged();
    return;
  }
  const step = stepById(state.step);
  const data = current(state);
  const stepChanged = step.id !== lastStep;
  lastStep = step.id;
  $("workspace").classList.toggle("wide", inSentenceMode() && (data?.tokens.length ?? 0) > 10);
  const mergedNow = Boolean(data) && inSentenceMode() && state.merge && step.stage === "weights";
  let view = data;
  if (data && inSentenceMode()) {
    const drawn = drawingFor(data);
    view = mergedNow ? mergeView(data, drawn, state.sentence) : { ...data, drawn };
  }
  shownView = view;
  if (view) {
    state.focus = Math.min(state.focus, data.tokens.length - 1);
    shownGroups = view.merged ? view.merged.groups : identityGroups(view.tokens.length);
    if (state.hover && (state.hover.row >= shownGroups.length || state.hover.col >= shownGroups.length)) state.hover = null;
  }
  const focusRow = view ? Math.max(0, shownGroups.findIndex((g) => g.includes(state.focus))) : 0;

  for (const btn of [$("mask-full"), $("mask-causal")]) {
    btn.setAttribute("aria-pressed", String(btn.dataset.mask === state.mask));
    btn.disabled = Boolean(state.result && !state.result[btn.dataset.mask]);
  }
  renderBanner(state, data);
  sentence.renderBar(data, mergedNow, slow);
  // predict first: the weights wait for a guess; until then the view shows the masked scores
  const waiting = renderPredict(state, step, view, focusRow);
  const shownStep = waiting ? stepById("mask") : step;
  if (view) {
    const rows = view.tokens.length;
    const from = rows > TABLE_MAX ? Math.min(rows - TABLE_MAX, Math.max(0, focusRow - TABLE_MAX / 2)) : 0;
    table.update({ focus: focusRow, hover: state.hover }, view, shownStep, rows > TABLE_MAX ? { from, to: from + TABLE_MAX } : null);
    renderArithmetic(arithmetic(shownStep, view, focusRow));
    renderComparison(state, focusRow, drawingFor);
    const n = view.tokens.length;
    let sceneData = view;
    let window = null;
    sceneOffset = 0;
    if (n > SCENE_MAX) {
      sceneOffset = Math.min(n - SCENE_MAX, Math.max(0, focusRow - Math.floor(SCENE_MAX / 2)));
      sceneData = sliceView(view, sceneOffset, sceneOffset + SCENE_MAX);
      window = { n, count: SCENE_MAX, from: sceneOffset + 1, to: sceneOffset + SCENE_MAX };
    }
    renderSceneNote(state, data, inSentenceMode() ? drawingFor(data) : null, window, Boolean(view.merged));
    lastScene = { data: sceneData, step: shownStep, focus: focusRow - sceneOffset };
    if (scene) scene.update({ ...lastScene, hover: sceneHover(state.hover) }, true);
    renderVectors();
  }
  lesson.renderAttention(view, { focusRow, focus: state.focus, mask: state.mask, sentenceMode: inSentenceMode(), data, page: state });
  editor.showErrors(state.errors);
  writeUrl(state, pushNext);
  pushNext = false;

  const ready = Boolean(data) && !state.pending && lesson.isAttention;
  Object.assign(root.dataset, {
    chapter: state.chapter,
    step: lesson.stepId() ?? state.step,
    viewStep: state.step,
    mask: state.mask,
    focus: String(state.focus),
    mode: inSentenceMode() ? "sentence" : "example",
    layer: String(state.layer),
    head: String(state.head),
    predict: waiting ? "waiting" : String(state.predict),
    rev: String(++revision),
    ready: String(ready),
  });
  if (stepChanged) root.dataset.stepChanged = String(revision);
  if (ready) settle();
  viewChanged();
}

// ---- the view, for the classroom and the exports (hub.js) ---------------------------------

/** The view as URL parameters (strings), with the chapter and step always named. */
function viewParams() {
  const params = Object.fromEntries(new URLSearchParams(urlFor(state)));
  return { ...params, chapter: state.chapter, step: lesson.stepId() ?? state.step };
}

/** Go to the view that `params` (an object or a query string) describe: no reload, no history entry. */
async function applyView(params) {
  const next = createState(DEFAULT_EXAMPLE);
  readUrl(next, typeof params === "string" ? params : new URLSearchParams(params).toString());
  predict.setPredictFirst(next.predict);
  if (ATTENTION_CHAPTERS.includes(next.chapter)) {
    const headChanged = next.layer !== state.layer || next.head !== state.head;
    Object.assign(state, { step: next.step, mask: next.mask, focus: next.focus, hover: null, layer: next.layer, head: next.head, merge: next.merge });
    if (next.input) {
      Object.assign(state, { input: next.input, edited: true, sentence: null, example: next.example });
      sourceStarted = true;
      afterNewInput();
    } else if (next.sentence) {
      if (next.sentence !== state.sentence || !sourceStarted) loadSentence(next.sentence, false);
      else if (headChanged) recompute(true);
    } else {
      const id = next.example ?? DEFAULT_EXAMPLE;
      if (id !== state.example || state.edited || state.sentence || !sourceStarted) loadExample(id, true);
    }
  }
  const keepMask = new URLSearchParams(typeof params === "string" ? params : new URLSearchParams(params).toString()).has("mask");
  await lesson.go(next.chapter, next.chapter === "steps" ? next.step : next.chapterStep, next.chapterParams, { keepMask });
  return drawn.whenDrawn();
}

function currentView() {
  const attention = attentionOn();
  return describeView({
    state,
    lesson,
    attention,
    three: attention ? scene : lesson.stage,
    stage: attention ? stepById(state.step).stage : (lesson.stepId() ?? null),
    tokens: attention ? (shownView?.tokens ?? null) : (lesson.answer?.tokens ?? null),
    answer: attention ? current(state) : lesson.answer,
  });
}

provideView({ state: viewParams, apply: applyView, current: currentView });

// Back and Forward: the browser restores a view the page pushed (a chapter, example ↔ sentence)
window.addEventListener("popstate", () => {
  applyView(window.location.search);
});

// ---- start -----------------------------------------------------------------------------

modelKnown
  .then((info) => {
    sentence.buildPickers(info.layers, info.heads);
    render();
  })
  .catch((err) => console.warn("model status unavailable:", err));

if (attentionOn()) startSource();
lesson.go(state.chapter, state.chapter === "steps" ? state.step : state.chapterStep, state.chapterParams, { keepMask: urlParams.has("mask") });
