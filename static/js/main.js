// Wires the page: one state object, read from the URL, drawn by the table, the lesson panel,
// the 3-D scene and the editor, and recomputed by the server whenever the input changes.
// Two sources: a hand-set example (editable Q, K, V) or a typed sentence, run by the real
// model (sentence mode: layer and head pickers, the overview of every head, merged pieces).

import { getExample, Recomputer } from "./api.js";
import { arithmetic } from "./arithmetic.js";
import { renderCompare } from "./compare.js";
import { Editor } from "./editor.js";
import { renderInspect } from "./inspect.js";
import {
  ANIMAL,
  ANIMAL_VIEW,
  allHeads,
  identityGroups,
  mergeView,
  modelInfo,
  parsePick,
  pickText,
  sentenceBothMasks,
  sliceView,
} from "./model.js";
import { Overview } from "./overview.js";
import { drawing } from "./projection.js";
import { SceneView } from "./scene/view.js";
import { createState, current, MASKS, MAX_SENTENCE, readUrl, writeUrl } from "./state.js";
import { STEP_IDS, STEPS, stepById, stepText } from "./steps.js";
import { MatrixTable } from "./table.js";
import "./classroom/index.js";
import "./export/index.js";

const $ = (id) => document.getElementById(id);
const root = $("app");
const state = createState(root.dataset.defaultExample);
const urlParams = new URLSearchParams(window.location.search);
readUrl(state, window.location.search);

let revision = 0;
let lastStep = null;
const SCENE_MAX = 32; // the most tokens the 3D view draws at once (a window around the focus)
const TABLE_MAX = 64; // the most rows and columns the table draws at once (the same idea)
let shownGroups = []; // per row of the shown table: the model's token indices in it
let sceneOffset = 0; // the first shown row the 3D view draws
let hoverToken = null; // a word hovered in the 3D view (sentence mode lists its numbers)
let wantWord = null; // focus this word once the sentence's tokens are known
const drawings = new WeakMap(); // response → its PCA drawing
const inSentenceMode = () => Boolean(state.sentence);

// ---- the parts of the page -------------------------------------------------------------

const table = new MatrixTable($("matrix"), {
  focus: (i) => setFocus(i),
  hover: (cell) => setHover(cell),
});

const editor = new Editor(
  $("editor-grids"),
  { dk: $("dk-input"), dv: $("dv-input"), add: $("add-token") },
  state,
  (structural) => {
    state.edited = true;
    state.notice = null;
    state.focus = Math.min(state.focus, state.input.tokens.length - 1);
    if (structural) editor.build();
    renderNotes();
    recompute(structural);
  },
);

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
  const p = document.createElement("p");
  p.className = "scene-fallback";
  p.textContent = `The 3D view needs WebGL, which this browser has turned off (${err.message}). The table has every number.`;
  $("scene").append(p);
  console.warn("3D view unavailable:", err);
}
$("reset-view").addEventListener("click", () => scene?.resetView());

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

// ---- sentence mode: the model, its pickers and the overview -------------------------------

const overview = new Overview($("overview-grid"), $("overview-status"), (layer, head) => setPick(layer, head));
let headsController = null;

function fillPicker(select, count, meanLabel) {
  const options = Array.from({ length: count }, (_, i) => new Option(String(i), String(i)));
  options.push(new Option(meanLabel, "mean"));
  select.replaceChildren(...options);
}

function buildPickers(layers, heads) {
  fillPicker($("layer-select"), layers, "mean");
  fillPicker($("head-select"), heads, "mean");
}
buildPickers(6, 12);

$("layer-select").addEventListener("change", (e) => setPick(parsePick(e.target.value), state.head));
$("head-select").addEventListener("change", (e) => setPick(state.layer, parsePick(e.target.value)));
$("merge-toggle").addEventListener("change", (e) => {
  state.merge = e.target.checked;
  state.hover = null;
  render();
});

function setPick(layer, head) {
  if (layer === null || head === null || (layer === state.layer && head === state.head)) return;
  state.layer = layer;
  state.head = head;
  recompute(true);
  render();
}

let modelWatch = null; // the poll in progress, if any

/** Ask for the model's weights (in the background) and poll until they are loaded. */
function ensureModel() {
  if (state.model?.loaded) return Promise.resolve();
  modelWatch ??= watchModel().finally(() => {
    modelWatch = null;
  });
  return modelWatch;
}

async function watchModel() {
  try {
    state.model = await modelInfo(true);
    // a load that failed leaves loaded and loading false: stop, the sentence's own request says why
    while (!state.model.loaded && state.model.loading) {
      state.modelLoading = true;
      render();
      await new Promise((r) => setTimeout(r, 300));
      state.model = await modelInfo(false);
    }
  } catch (err) {
    console.warn("model status unavailable:", err);
  }
  if (state.modelLoading) {
    state.modelLoading = false;
    render();
  }
}

/** The overview of every head for the sentence and mask (fetched once per pair). */
async function fetchHeads() {
  if (!inSentenceMode()) return;
  const mask = state.model?.kind === "gpt2" ? "causal" : state.mask;
  const key = `${mask}|${state.sentence}`;
  if (state.heads?.key === key) return;
  headsController?.abort();
  const controller = new AbortController();
  headsController = controller;
  state.heads = { key, pending: true };
  let outcome;
  try {
    outcome = await allHeads(state.sentence, mask, controller.signal);
  } catch (err) {
    if (controller.signal.aborted) return;
    outcome = { ok: false, errors: [{ msg: `Could not reach the server (${err.message}).` }] };
  }
  if (state.heads?.key !== key) return;
  state.heads = outcome.ok ? { key, data: outcome.data } : { key, error: outcome.errors.map((e) => e.msg).join(" ") };
  render();
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

/** Cells that are not numbers at all are caught here, before asking the server. */
function typingErrors(input) {
  const errors = [];
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

// ---- stepper ---------------------------------------------------------------------------

const stepButtons = STEPS.map((step, i) => {
  const li = document.createElement("li");
  const btn = document.createElement("button");
  btn.type = "button";
  btn.dataset.step = step.id;
  btn.dataset.testid = `step-${step.id}`;
  const num = document.createElement("span");
  num.className = "num";
  num.textContent = String(i + 1);
  btn.append(num, document.createTextNode(` ${step.short}`));
  btn.addEventListener("click", () => setStep(step.id));
  li.append(btn);
  $("step-list").append(li);
  return btn;
});

function setStep(id) {
  if (!STEP_IDS.includes(id) || id === state.step) return;
  state.step = id;
  render();
}

function moveStep(delta) {
  const i = STEP_IDS.indexOf(state.step) + delta;
  if (i >= 0 && i < STEP_IDS.length) setStep(STEP_IDS[i]);
}

function setMask(mask) {
  if (!MASKS.includes(mask) || mask === state.mask) return;
  if (inSentenceMode() && state.result && !state.result[mask]) return; // a decoder has no full mask
  state.mask = mask;
  render();
  fetchHeads();
}

/** Focus row `i` of the shown table (a word when pieces are merged: its first token). */
function setFocus(i) {
  if (i < 0 || i >= shownGroups.length) return;
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

$("prev-step").addEventListener("click", () => moveStep(-1));
$("next-step").addEventListener("click", () => moveStep(1));
for (const btn of [$("mask-full"), $("mask-causal")]) btn.addEventListener("click", () => setMask(btn.dataset.mask));

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t instanceof HTMLElement && (t.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(t.tagName))) return;
  if (e.key === "ArrowRight") moveStep(1);
  else if (e.key === "ArrowLeft") moveStep(-1);
  else if (e.key === "m" || e.key === "M") setMask(state.mask === "full" ? "causal" : "full");
  else if (/^[1-9]$/.test(e.key)) setFocus(Number(e.key) - 1);
  else return;
  e.preventDefault();
});

// ---- sources: a built-in example or a typed sentence -----------------------------------

const knownExamples = new Set([...$("example-select").options].map((o) => o.value).filter(Boolean));

async function loadExample(id, keepMask) {
  let ex;
  try {
    if (!knownExamples.has(id)) throw new Error("unknown example");
    ex = await getExample(id);
  } catch {
    state.notice = `There is no example called “${id}”; showing the default one.`;
    if (id !== root.dataset.defaultExample) return loadExample(root.dataset.defaultExample, keepMask);
    render();
    return;
  }
  state.example = ex.id;
  state.sentence = null;
  state.heads = null;
  headsController?.abort();
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
function loadSentence(sentence, fresh) {
  const wasSentence = inSentenceMode();
  state.sentence = sentence.slice(0, MAX_SENTENCE);
  state.example = null;
  state.edited = false;
  state.input = null;
  recomputer.cancel();
  if (fresh) {
    // the first sentence opens on layer 0, head 0 (the animal sentence on its own head); a
    // later one keeps the head being looked at, to compare sentences
    const animal = sentence.trim() === ANIMAL;
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
  renderNotes();
  render();
  ensureModel();
  recompute(true);
  fetchHeads();
}

function afterNewInput() {
  state.focus = Math.min(state.focus, state.input.tokens.length - 1);
  state.hover = null;
  state.result = null;
  editor.build();
  renderNotes();
  recompute(true);
}

$("example-select").addEventListener("change", (e) => {
  const id = e.target.value;
  state.notice = null;
  if (id) {
    state.focus = 0;
    loadExample(id, false);
  }
});
$("source-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("sentence-input").value;
  state.notice = null;
  if (text.trim()) loadSentence(text, true);
});
$("animal-go").addEventListener("click", () => {
  state.notice = null;
  $("sentence-input").value = ANIMAL;
  loadSentence(ANIMAL, true);
});
$("sentence-input").addEventListener("focus", () => {
  // start loading the weights while the user types (answers at once; loads in the background)
  if (state.model && !state.model.loaded && !state.model.loading) modelInfo(true).catch(() => {});
});

// ---- drawing ---------------------------------------------------------------------------

function renderNotes() {
  const note = $("editor-note");
  $("editor").classList.toggle("model-mode", inSentenceMode());
  if (inSentenceMode()) {
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

function renderSceneNote(data, window, merged = false) {
  const dk = data.d_k;
  const dv = data.v[0].length;
  if (inSentenceMode()) {
    const d = drawingFor(data);
    const pct = (x) => `${Math.round(x * 100)} %`;
    const parts = [
      `q and k drawn by PCA over this head's queries and keys: the first two components explain ${pct(d.qk ?? 1)} of their variance; ` +
        `v (and z) by their own PCA (${pct(d.vz ?? 1)}). Arrows start at each word and show where its vector sits relative to the mean.` +
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

let lastScene = null; // what the 3D view was last given (for hover updates)

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

function renderModelBar(step, data, mergedNow) {
  const bar = $("model-bar");
  bar.hidden = !inSentenceMode();
  $("overview").hidden = !inSentenceMode();
  if (!inSentenceMode()) return;
  if (state.model) $("model-name").textContent = `${state.model.name}: ${state.model.layers} layers × ${state.model.heads} heads, d_k = ${state.model.head_size}`;
  $("layer-select").value = String(state.layer);
  $("head-select").value = String(state.head);
  $("merge-toggle").checked = state.merge;
  const status = $("model-status");
  const text = state.modelLoading
    ? `Loading the model (${state.model?.name ?? "all-MiniLM-L6-v2"}) for the first time: a few seconds…`
    : state.pending && slow
      ? "Running the model…"
      : "";
  status.textContent = text;
  status.hidden = !text;
  status.classList.toggle("loading", state.modelLoading);

  const notes = [];
  const hasPieces = data && data.tokens.some((t) => t.startsWith("##"));
  if (data) notes.push(`Showing ${pickText(data.layer, data.head)}.`);
  if (state.merge && !mergedNow) {
    notes.push(
      "Word pieces are merged from step 4 (softmax) on: a word's share is the sum of its pieces' weights, " +
        "but scores before softmax do not add up, so steps 1–3 show the model's own tokens.",
    );
  } else if (mergedNow) {
    notes.push(
      "Pieces merged (the common convention): a key word gets the sum of its pieces' weights, " +
        "a query word the mean of its pieces' rows, so each row still sums to 1.",
    );
  } else if (hasPieces) {
    notes.push("## marks a word piece: the model reads unfamiliar words in parts.");
  }
  if (data?.mean_over?.length) {
    notes.push(
      `Every stage is the mean over the ${data.mean_over.join(" and ")} of each one's own numbers: ` +
        "a mean weight is not the softmax of the mean score.",
    );
  }
  if (state.mask === "causal" && state.model?.kind !== "gpt2") {
    notes.push(
      "Causal mask: the server recomputes this head from the model's q, k, v as if it could not see later " +
        "tokens (the model itself ran with its full mask).",
    );
  }
  $("model-note").textContent = notes.join(" ");

  const heads = state.heads;
  if (heads?.data) {
    overview.show(heads.data);
    overview.highlight(state.layer, state.head);
    overview.message("");
  } else {
    overview.clear();
    overview.message(heads?.error ? `The overview is unavailable: ${heads.error}` : "Loading all the heads…");
  }
}

function render() {
  const step = stepById(state.step);
  const data = current(state);
  const stepChanged = step.id !== lastStep;
  lastStep = step.id;
  const wide = inSentenceMode() && (data?.tokens.length ?? 0) > 10;
  $("workspace").classList.toggle("wide", wide);
  const mergedNow = Boolean(data) && inSentenceMode() && state.merge && step.stage === "weights";
  let view = data;
  if (data && inSentenceMode()) {
    const drawn = drawingFor(data);
    view = mergedNow ? mergeView(data, drawn, state.sentence) : { ...data, drawn };
  }
  if (view) {
    state.focus = Math.min(state.focus, data.tokens.length - 1);
    shownGroups = view.merged ? view.merged.groups : identityGroups(view.tokens.length);
    if (state.hover && (state.hover.row >= shownGroups.length || state.hover.col >= shownGroups.length)) state.hover = null;
  }
  const focusRow = view ? Math.max(0, shownGroups.findIndex((g) => g.includes(state.focus))) : 0;

  stepButtons.forEach((btn) => {
    const on = btn.dataset.step === step.id;
    btn.classList.toggle("current", on);
    if (on) btn.setAttribute("aria-current", "step");
    else btn.removeAttribute("aria-current");
  });
  $("prev-step").disabled = step.id === STEP_IDS[0];
  $("next-step").disabled = step.id === STEP_IDS[STEP_IDS.length - 1];
  for (const btn of [$("mask-full"), $("mask-causal")]) {
    btn.setAttribute("aria-pressed", String(btn.dataset.mask === state.mask));
    btn.disabled = Boolean(state.result && !state.result[btn.dataset.mask]);
  }

  $("step-title").textContent = `${STEP_IDS.indexOf(step.id) + 1}. ${step.title}`;
  $("step-text").textContent = stepText(step, state.mask);

  const banner = $("error-banner");
  if (state.errors.length) {
    banner.hidden = false;
    const messages = state.errors.map((e) => e.msg).join(" ");
    banner.textContent = inSentenceMode()
      ? data
        ? `${messages} (The page still shows the last answer.)`
        : messages
      : data
        ? "That edit cannot be computed yet (see the message by the editor below); the page still shows the last valid numbers."
        : messages;
  } else if (state.notice) {
    banner.hidden = false;
    banner.textContent = state.notice;
  } else {
    banner.hidden = true;
    banner.textContent = "";
  }

  renderModelBar(step, data, mergedNow);
  if (view) {
    const rows = view.tokens.length;
    const from = rows > TABLE_MAX ? Math.min(rows - TABLE_MAX, Math.max(0, focusRow - TABLE_MAX / 2)) : 0;
    table.update({ focus: focusRow, hover: state.hover }, view, step, rows > TABLE_MAX ? { from, to: from + TABLE_MAX } : null);
    const arith = arithmetic(step, view, focusRow);
    $("arith-title").textContent = arith.title;
    const lines = arith.lines.map((line, j) => {
      const li = document.createElement("li");
      li.dataset.testid = `arith-${j}`;
      if (line.hidden) li.className = "hidden-key";
      const key = document.createElement("span");
      key.className = "arith-key";
      key.textContent = line.key;
      const text = document.createElement("span");
      text.className = "arith-text";
      text.textContent = line.text;
      li.append(key, text);
      return li;
    });
    $("arith-lines").replaceChildren(...lines);
    $("arith-check").textContent = arith.check;
    $("arith-check").hidden = !arith.check;
    renderComparison(focusRow);
    const n = view.tokens.length;
    let sceneData = view;
    let window = null;
    sceneOffset = 0;
    if (n > SCENE_MAX) {
      sceneOffset = Math.min(n - SCENE_MAX, Math.max(0, focusRow - Math.floor(SCENE_MAX / 2)));
      sceneData = sliceView(view, sceneOffset, sceneOffset + SCENE_MAX);
      window = { n, count: SCENE_MAX, from: sceneOffset + 1, to: sceneOffset + SCENE_MAX };
    }
    renderSceneNote(data, window, Boolean(view.merged));
    lastScene = { data: sceneData, step, focus: focusRow - sceneOffset };
    if (scene) scene.update({ ...lastScene, hover: sceneHover(state.hover) }, true);
    renderVectors();
  }
  editor.showErrors(state.errors);
  writeUrl(state);

  root.dataset.step = state.step;
  root.dataset.mask = state.mask;
  root.dataset.focus = String(state.focus);
  root.dataset.mode = inSentenceMode() ? "sentence" : "example";
  root.dataset.layer = String(state.layer);
  root.dataset.head = String(state.head);
  root.dataset.rev = String(++revision);
  root.dataset.ready = String(Boolean(data) && !state.pending);
  if (stepChanged) root.dataset.stepChanged = String(revision);
}

const COMPARE_MAX = 20; // rows the side-by-side tables can show readably

function renderComparison(focusRow) {
  const box = $("compare-tables");
  const { full, causal } = state.result;
  if (!full || !causal) {
    box.replaceChildren(document.createTextNode("This model is a decoder: it only ever runs with its causal mask."));
    return;
  }
  const merged = inSentenceMode() && state.merge;
  const asShown = (d) => (merged ? mergeView(d, drawingFor(d), state.sentence) : d);
  const f = asShown(full);
  if (f.tokens.length > COMPARE_MAX) {
    box.replaceChildren(
      document.createTextNode(
        `${f.tokens.length} rows are too many to compare side by side; press M to switch the table between the masks.`,
      ),
    );
    return;
  }
  const rowOf = merged ? Math.max(0, f.merged.groups.findIndex((g) => g.includes(state.focus))) : focusRow;
  renderCompare(box, { full: f, causal: asShown(causal) }, rowOf);
}

// ---- start -----------------------------------------------------------------------------

modelInfo(false)
  .then((info) => {
    state.model = info;
    buildPickers(info.layers, info.heads);
    render();
  })
  .catch((err) => console.warn("model status unavailable:", err));

render();
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
  loadExample(state.example || root.dataset.defaultExample, urlParams.has("mask"));
}
