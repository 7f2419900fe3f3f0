// The viewer inside an exported .html file: no server, no network. It reads the numbers from the
// file's <script type="application/json" id="attention-data"> and draws them with the page's own
// scene and table modules (bundled into the file by scripts/build.mjs): the steps, orbiting, and
// the mask toggle when both masks were exported.
//
// A whole lesson (lessonHtml in html.js) is one file too: { lesson: { title, views: [...] } }, each
// view either an attention view ({ step, mask, focus, answers }) or a still one ({ title, text,
// picture, numbers }), each with its note; ← → keep stepping within a view, PageDown/PageUp (or the
// buttons) go from view to view.
//
// A long sentence is drawn as the page draws it: a window of at most SCENE_MAX tokens around the
// focused one (the table keeps every row).
import { el } from "../dom.js";
import { sliceView } from "../model.js";
import { drawing } from "../projection.js";
import { SceneView } from "../scene/view.js";
import { STEPS, stepText } from "../attention/stages.js";
import { MatrixTable } from "../table.js";
import { useLanguage } from "../i18n.js";

// the file's language: the exporting page's catalog is inside the file (export/html.js), English's in this viewer
const words = document.getElementById("attention-i18n");
if (words) {
  const { lang, messages } = JSON.parse(words.textContent);
  useLanguage(lang, messages);
}

const SCENE_MAX = 32; // the most tokens the page's 3D view draws at once (static/js/main.js)

/** The first row of the 3D view's window for n tokens focused on row `focus`, as the page picks it. */
function windowStart(n, focus, max = SCENE_MAX) {
  return n > max ? Math.min(n - max, Math.max(0, focus - Math.floor(max / 2))) : 0;
}

const file = JSON.parse(document.getElementById("attention-data").textContent);
const lesson = file.lesson ?? null;
const $ = (id) => document.getElementById(id);
const attentionViews = lesson ? lesson.views.filter((v) => v.answers) : [file];
let data = null;
const view = { step: "score", mask: "full", focus: 0, index: 0 };

const sceneData = (answer) => (answer.q[0].length > 2 && !answer.drawn ? { ...answer, drawn: drawing(answer) } : answer);
let drawn = {};
const most = Math.min(SCENE_MAX, Math.max(2, ...attentionViews.flatMap((v) => Object.values(v.answers).map((a) => a.tokens.length))));
let offset = 0; // the first row the 3D view draws
const scene = attentionViews.length
  ? new SceneView($("scene"), most, (i) => {
      view.focus = i + offset;
      render();
    })
  : null;
const table = new MatrixTable($("matrix"), { focus: (i) => ((view.focus = i), render()), hover: () => {} });

const steps = $("steps");
for (const step of STEPS) {
  const b = el("button", { type: "button", dataset: { step: step.id } }, step.short);
  b.addEventListener("click", () => ((view.step = step.id), render()));
  steps.append(b);
}
for (const mask of ["full", "causal"]) $(`mask-${mask}`).addEventListener("click", () => ((view.mask = mask), render()));

/** Show view i of the lesson (or the file's one view). */
function open(i) {
  const next = lesson ? lesson.views[i] : file;
  view.index = i;
  drawn = {};
  data = next;
  if (next.answers) {
    view.step = next.step ?? "score";
    view.mask = next.answers[next.mask] ? next.mask : Object.keys(next.answers)[0];
    view.focus = Number(next.focus ?? 0);
  }
  render();
}

document.addEventListener("keydown", (e) => {
  if (lesson && (e.key === "PageDown" || e.key === "PageUp")) {
    const i = view.index + (e.key === "PageDown" ? 1 : -1);
    if (i >= 0 && i < lesson.views.length) open(i);
    e.preventDefault();
    return;
  }
  if (!data?.answers) return;
  const i = STEPS.findIndex((s) => s.id === view.step);
  if (e.key === "ArrowRight" && i < STEPS.length - 1) view.step = STEPS[i + 1].id;
  else if (e.key === "ArrowLeft" && i > 0) view.step = STEPS[i - 1].id;
  else if ((e.key === "m" || e.key === "M") && data.answers.full && data.answers.causal) view.mask = view.mask === "full" ? "causal" : "full";
  else return;
  render();
});

if (lesson) {
  $("lesson-prev").addEventListener("click", () => view.index > 0 && open(view.index - 1));
  $("lesson-next").addEventListener("click", () => view.index < lesson.views.length - 1 && open(view.index + 1));
}

function renderLesson() {
  if (!lesson) return;
  $("lesson-where").textContent = `${view.index + 1} / ${lesson.views.length}`;
  $("lesson-note").textContent = data.note ?? "";
  $("lesson-prev").disabled = view.index === 0;
  $("lesson-next").disabled = view.index === lesson.views.length - 1;
  const still = !data.answers;
  $("still").style.display = still ? "" : "none";
  for (const id of ["viewer", "stepper"]) $(id).style.display = still ? "none" : "";
  if (still) {
    $("still-title").textContent = data.title ?? "";
    $("still-text").textContent = data.text ?? "";
    $("still-picture").hidden = !data.picture;
    if (data.picture) $("still-picture").src = data.picture;
    $("still-numbers").textContent = JSON.stringify(data.numbers ?? {}, null, 1);
  }
  document.body.dataset.view = String(view.index);
}

function render() {
  renderLesson();
  if (!data.answers) return;
  const step = STEPS.find((s) => s.id === view.step) ?? STEPS[0];
  const answer = data.answers[view.mask];
  drawn[view.mask] ??= sceneData(answer);
  view.focus = Math.min(view.focus, answer.tokens.length - 1);
  for (const b of steps.children) {
    b.classList.toggle("current", b.dataset.step === step.id);
    b.setAttribute("aria-pressed", String(b.dataset.step === step.id));
  }
  for (const mask of ["full", "causal"]) {
    $(`mask-${mask}`).disabled = !data.answers[mask];
    $(`mask-${mask}`).setAttribute("aria-pressed", String(mask === view.mask));
  }
  $("step-title").textContent = step.title;
  $("step-text").textContent = stepText(step, view.mask);
  table.update({ focus: view.focus, hover: null }, answer, step);
  const n = answer.tokens.length;
  offset = windowStart(n, view.focus);
  const shown = n > SCENE_MAX ? sliceView(drawn[view.mask], offset, offset + SCENE_MAX) : drawn[view.mask];
  scene.update({ data: shown, step, focus: view.focus - offset, hover: null }, false);
  document.body.dataset.window = `${offset + 1}-${offset + Math.min(n, SCENE_MAX)}`;
  document.body.dataset.step = step.id;
  document.body.dataset.mask = view.mask;
}

open(0);
document.body.dataset.ready = "true";
