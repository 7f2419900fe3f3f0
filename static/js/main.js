// Wires the page: one state object, read from the URL, drawn by the table, the lesson panel,
// the 3-D scene and the editor, and recomputed by the server whenever the input changes.

import { getExample, Recomputer } from "./api.js";
import { arithmetic } from "./arithmetic.js";
import { renderCompare } from "./compare.js";
import { Editor } from "./editor.js";
import { SceneView } from "./scene/view.js";
import { inputFromSentence } from "./sentence.js";
import { createState, current, MASKS, MAX_TOKENS, readUrl, writeUrl } from "./state.js";
import { STEP_IDS, STEPS, stepById, stepText } from "./steps.js";
import { MatrixTable } from "./table.js";

const $ = (id) => document.getElementById(id);
const root = $("app");
const state = createState(root.dataset.defaultExample);
const urlParams = new URLSearchParams(window.location.search);
readUrl(state, window.location.search);

let revision = 0;
let lastStep = null;

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
  scene = new SceneView($("scene"), MAX_TOKENS, (i) => setFocus(i));
} catch (err) {
  const p = document.createElement("p");
  p.className = "scene-fallback";
  p.textContent = `The 3D view needs WebGL, which this browser has turned off (${err.message}). The table has every number.`;
  $("scene").append(p);
  console.warn("3D view unavailable:", err);
}
$("reset-view").addEventListener("click", () => scene?.resetView());

const recomputer = new Recomputer((outcome) => {
  state.pending = false;
  if (outcome.ok) {
    state.result = outcome.data;
    state.errors = [];
  } else {
    state.errors = outcome.errors; // the last good result stays drawn
  }
  render();
});

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
  state.mask = mask;
  render();
}

function setFocus(i) {
  const n = current(state)?.tokens.length ?? 0;
  if (i < 0 || i >= n) return;
  state.focus = i;
  state.hover = null;
  render();
}

function setHover(cell) {
  const same = cell && state.hover && cell.row === state.hover.row && cell.col === state.hover.col;
  if (same || (!cell && !state.hover)) return;
  state.hover = cell;
  table.highlight(cell);
  const data = current(state);
  if (scene && data) scene.update({ data, step: stepById(state.step), focus: state.focus, hover: cell });
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
  state.edited = false;
  state.input = { tokens: ex.tokens, q: ex.q, k: ex.k, v: ex.v };
  if (!keepMask) state.mask = ex.mask;
  afterNewInput();
}

function loadSentence(sentence) {
  const input = inputFromSentence(sentence);
  if (!input.tokens.length) return;
  state.sentence = sentence;
  state.example = null;
  state.edited = false;
  state.input = input;
  afterNewInput();
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
  if (text.trim()) {
    state.focus = 0;
    loadSentence(text);
  }
});

// ---- drawing ---------------------------------------------------------------------------

function renderNotes() {
  const note = $("editor-note");
  if (state.sentence && !state.edited) {
    note.textContent =
      "No real model is connected yet, so each typed word got small made-up 2-D vectors " +
      "(from a hash of the word: the same word always gets the same numbers). Edit them below " +
      "to decide who attends to whom.";
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

function renderSceneNote(data) {
  const dk = data.d_k;
  const dv = data.v[0].length;
  $("scene-note").textContent =
    dk > 2 || dv > 2
      ? `These vectors have d_k = ${dk} and d_v = ${dv} coordinates; the arrows show only the first two ` +
        "(x to the right, y up). The table and the arithmetic use all of them."
      : "Each vector has two coordinates, drawn in the plane of its row: x to the right, y up " +
        "(q and k share one scale, v and z another).";
}

function render() {
  const step = stepById(state.step);
  const data = current(state);
  const stepChanged = step.id !== lastStep;
  lastStep = step.id;

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
  }

  $("step-title").textContent = `${STEP_IDS.indexOf(step.id) + 1}. ${step.title}`;
  $("step-text").textContent = stepText(step, state.mask);

  const banner = $("error-banner");
  if (state.errors.length) {
    banner.hidden = false;
    banner.textContent = data
      ? "That edit cannot be computed yet (see the message by the editor below); the page still shows the last valid numbers."
      : state.errors.map((e) => e.msg).join(" ");
  } else if (state.notice) {
    banner.hidden = false;
    banner.textContent = state.notice;
  } else {
    banner.hidden = true;
    banner.textContent = "";
  }

  if (data) {
    state.focus = Math.min(state.focus, data.tokens.length - 1);
    table.update(state, data, step);
    const arith = arithmetic(step, data, state.focus);
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
    renderCompare($("compare-tables"), state.result, state.focus);
    renderSceneNote(data);
    if (scene) scene.update({ data, step, focus: state.focus, hover: state.hover }, true);
  }
  editor.showErrors(state.errors);
  writeUrl(state);

  root.dataset.step = state.step;
  root.dataset.mask = state.mask;
  root.dataset.focus = String(state.focus);
  root.dataset.rev = String(++revision);
  root.dataset.ready = String(Boolean(data) && !state.pending);
  if (stepChanged) root.dataset.stepChanged = String(revision);
}

// ---- start -----------------------------------------------------------------------------

render();
if (state.input) {
  afterNewInput();
} else if (state.sentence) {
  loadSentence(state.sentence);
} else {
  loadExample(state.example || root.dataset.defaultExample, urlParams.has("mask"));
}
