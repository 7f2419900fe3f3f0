// Wires the page, and only wires: its language first (i18n.js), the store (one state object, changed by
// the named actions of actions.js), the lesson (lesson.js: the chapters of chapters/index.js), the attention
// view (attention/: derive(state) → view, drawn by AttentionView) and its numbers' source (attention/source.js),
// the editor, sentence mode's bar, the keys, the URL, and the view for the classroom and the exports
// (pageview.js). After every change of the state the chapter draws again, the URL follows, the classroom hears.

import { actions, OPENING_WORD } from "./actions.js";
import { apiGet, modelInfo } from "./api.js";
import { SCENE_MAX } from "./attention/derive.js";
import { modelEntry, Source } from "./attention/source.js";
import { stepById } from "./attention/stages.js";
import { AttentionView } from "./attention/view.js";
import { el } from "./dom.js";
import { Editor } from "./editor.js";
import { installKeys } from "./keys.js";
import { Lesson } from "./lesson.js";
import { ANIMAL } from "./model.js";
import { describeView, drawnSignal, provideView, viewChanged } from "./pageview.js";
import { Stage } from "./scene/stage.js";
import { SceneView } from "./scene/view.js";
import { SentenceParts } from "./sentence.js";
import { ATTENTION_CHAPTERS, createState, current, readUrl, snapshot, writeUrl } from "./state.js";
import { createStore } from "./store.js";
import { startLanguage, t } from "./i18n.js";
import "./classroom/index.js";
import "./export/index.js";

await startLanguage(apiGet); // the page's language and its catalog, before anything draws
const $ = (id) => document.getElementById(id);
const root = $("app");
const DEFAULT_EXAMPLE = root.dataset.defaultExample;
const urlParams = new URLSearchParams(window.location.search);
const store = createStore(createState(DEFAULT_EXAMPLE), actions);
readUrl(store.state, window.location.search); // the state's first value, before anything reads it
const { state, act } = store;
const drawn = drawnSignal(root); // applyView() resolves once the page is drawn
const attentionOn = () => ATTENTION_CHAPTERS.includes(state.chapter);
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;

/** A 3D view, or a sentence in its place when the browser has no WebGL. */
function threeD(container, make) {
  try {
    return make();
  } catch (err) {
    console.warn("3D view unavailable:", err);
    container.append(el("p", { className: "scene-fallback" }, t("scene.noWebgl", { reason: err.message })));
    return null;
  }
}

// ---- the parts of the page -------------------------------------------------------------

const modelKnown = modelInfo(false, undefined, state.modelId).then((info) => {
  act.modelKnown(info); // the model's name, layers and heads
  return info;
});
const choose = (id) => act.modelChosen(id, modelEntry(state, id)) !== false && state.sentence && source.sentence(state.sentence); // the model picker
const sentence = new SentenceParts(store, { pick: (layer, head, from) => pick(layer, head, from), known: modelKnown, choose });
const editor = new Editor($("editor-grids"), { dk: $("dk-input"), dv: $("dv-input"), add: $("add-token") }, state, (input, how) => {
  act.inputEdited(input, { removed: how.removed ?? null });
  if (how.structural) editor.build();
  source.recompute(false);
});
const attention = new AttentionView(store, {
  sentence,
  editor,
  makeScene: (container, on) => threeD(container, () => new SceneView(container, SCENE_MAX, on.focus, on.hover)),
  mounted: () => {
    if (!source.started) source.start(urlParams);
  },
});
const knownExamples = new Set([...$("example-select").options].map((o) => o.value).filter(Boolean));
const source = new Source(store, { defaultExample: DEFAULT_EXAMPLE, examples: knownExamples, heads: sentence, newSource: () => editor.build() });
const lesson = new Lesson(store, {
  attention,
  makeStage: (container) => threeD(container, () => new Stage(container)),
  drawn: (ready) => mark(ready),
});

/** The page's data-* attributes (what tests and the classroom wait on), and "drawn" kept. */
function mark(ready) {
  Object.assign(root.dataset, {
    chapter: state.chapter,
    step: lesson.stepId() ?? state.step,
    viewStep: state.step,
    mask: state.mask,
    focus: String(state.focus),
    mode: state.sentence ? "sentence" : "example",
    layer: String(state.layer),
    head: String(state.head),
    predict: attentionOn() && attention.now?.question ? "waiting" : String(state.predict),
    withheld: state.withheld?.reason ?? "",
    ready: String(ready),
  });
  if (ready) drawn.settle();
}

// After every change: the chapter on screen draws again, the overview (and a mask left for later)
// follows the sentence and mask, the URL and the classroom follow the view.
store.subscribe((name) => {
  lesson.refresh();
  if (name === "setHover" || name === "setHoverToken" || name === "setRole") return; // not the view: nothing to tell
  if (attentionOn() && state.sentence && attention.mounted) source.afterChange(); // the overview, a mask left for later
  writeUrl(state, state.history === "push");
  act.urlWritten();
  viewChanged();
});

function pick(layer, head, from = null) {
  if (act.setPick(layer, head) === false) return;
  source.recompute(true);
  // a thumbnail far below the view: bring the view that changed into sight (issue 11, item 7)
  if (from === "overview") $("workspace").scrollIntoView({ block: "start", behavior: reducedMotion ? "auto" : "smooth" });
}

// ---- controls ----------------------------------------------------------------------------

for (const btn of [$("mask-full"), $("mask-causal")]) btn.addEventListener("click", () => attentionOn() && act.setMask(btn.dataset.mask));
$("merge-toggle").addEventListener("change", (e) => act.setMerge(e.target.checked));

installKeys({
  step: (d) => lesson.move(d),
  walk: (d) => lesson.walk(d),
  mask: () => attentionOn() && act.setMask(state.mask === "full" ? "causal" : "full"),
  focus: (i) => attention.focusRow(i),
  escape: () => !$("contents").hidden && (lesson.toggleContents(false) ?? true),
});

$("example-select").addEventListener("change", (e) => {
  act.setNotice(null);
  const id = e.target.value;
  if (id) source.example(id, { keepMask: state.chapter !== "steps", focus: 0, wantWord: OPENING_WORD[id] ?? null, history: true });
});

/** A typed or clicked sentence, run by the model (on the five steps when another chapter is on). */
function runSentence(text) {
  act.setNotice(null);
  if (!text.trim()) {
    act.setNotice(t(text ? "notice.onlySpaces" : "notice.noSentence"));
    return;
  }
  if (!attentionOn()) lesson.go("steps", null, null, { history: true });
  source.sentence(text, { fresh: true, history: true });
}
$("source-form").addEventListener("submit", (e) => {
  e.preventDefault();
  runSentence($("sentence-input").value);
});
$("animal-go").addEventListener("click", () => {
  $("sentence-input").value = ANIMAL;
  runSentence(ANIMAL);
});
$("sentence-input").addEventListener("focus", () => source.warmModel()); // the weights load while the user types

// ---- the view, for the classroom and the exports (pageview.js) -------------------------------

/** Go to the view that `params` (an object or a query string) describe: no reload, no history entry. */
async function applyView(params) {
  const query = typeof params === "string" ? params : new URLSearchParams(params).toString();
  const before = { layer: state.layer, head: state.head };
  act.applySnapshot(query, DEFAULT_EXAMPLE);
  if (attentionOn()) source.follow(query, before);
  const keepMask = new URLSearchParams(query).has("mask");
  await lesson.go(state.chapter, lesson.stepId(), state.chapterParams, { keepMask });
  return drawn.whenDrawn();
}

function currentView() {
  const on = attentionOn();
  const v = attention.now;
  return describeView({
    state,
    step: lesson.stepId() ?? state.step,
    attention: on,
    three: on ? attention.scene : lesson.stage,
    stage: on ? (v?.shownStep ?? stepById(state.step)).stage : (lesson.stepId() ?? null),
    tokens: on ? (v?.shown?.tokens ?? null) : (lesson.answer?.tokens ?? null),
    answer: on ? current(state) : lesson.answer,
    withheld: on ? (v?.withheld ?? null) : state.withheld,
  });
}

provideView({
  store,
  state: () => snapshot(state),
  apply: applyView,
  current: currentView,
  reframe: () => lesson.reframe(),
});

// Back and Forward: the browser restores a view the page pushed (a chapter, example ↔ sentence)
window.addEventListener("popstate", () => applyView(window.location.search));

// ---- start -----------------------------------------------------------------------------

// the pickers of the model shown now: the first answer is the default's, and a model picked since keeps its own
const pickersOf = (m) => m && sentence.buildPickers(m.layers, m.heads, m.kv_heads ?? m.heads);
modelKnown.then(() => { pickersOf(state.model); lesson.refresh(); }).catch((err) => console.warn("model status unavailable:", err));

lesson.go(state.chapter, lesson.stepId(), state.chapterParams, { keepMask: urlParams.has("mask") });
