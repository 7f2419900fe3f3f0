// The viewer inside an exported .html file: no server, no network. It reads the view's numbers
// from the file's <script type="application/json" id="attention-data"> and draws them with the
// page's own scene and table modules (bundled into the file by scripts/build.mjs): the steps,
// orbiting, and the mask toggle when both masks were exported. A long sentence is drawn as the page
// draws it: a window of at most SCENE_MAX tokens around the focused one (the table keeps every row).
import { el } from "../dom.js";
import { sliceView } from "../model.js";
import { drawing } from "../projection.js";
import { SceneView } from "../scene/view.js";
import { STEPS, stepText } from "../steps.js";
import { MatrixTable } from "../table.js";

const SCENE_MAX = 32; // the most tokens the page's 3D view draws at once (static/js/main.js)

/** The first row of the 3D view's window for n tokens focused on row `focus`, as the page picks it. */
export function windowStart(n, focus, max = SCENE_MAX) {
  return n > max ? Math.min(n - max, Math.max(0, focus - Math.floor(max / 2))) : 0;
}

const data = JSON.parse(document.getElementById("attention-data").textContent);
const $ = (id) => document.getElementById(id);
const view = { step: data.step, mask: data.answers[data.mask] ? data.mask : Object.keys(data.answers)[0], focus: data.focus ?? 0 };

const sceneData = (answer) => (answer.q[0].length > 2 && !answer.drawn ? { ...answer, drawn: drawing(answer) } : answer);
const drawn = {};
let offset = 0; // the first row the 3D view draws
const scene = new SceneView($("scene"), Math.min(SCENE_MAX, Math.max(...Object.values(data.answers).map((a) => a.tokens.length))), (i) => {
  view.focus = i + offset;
  render();
});
const table = new MatrixTable($("matrix"), { focus: (i) => ((view.focus = i), render()), hover: () => {} });

const steps = $("steps");
for (const step of STEPS) {
  const b = el("button", { type: "button", dataset: { step: step.id } }, step.short);
  b.addEventListener("click", () => ((view.step = step.id), render()));
  steps.append(b);
}
for (const mask of ["full", "causal"]) {
  const b = $(`mask-${mask}`);
  b.disabled = !data.answers[mask];
  b.addEventListener("click", () => ((view.mask = mask), render()));
}
document.addEventListener("keydown", (e) => {
  const i = STEPS.findIndex((s) => s.id === view.step);
  if (e.key === "ArrowRight" && i < STEPS.length - 1) view.step = STEPS[i + 1].id;
  else if (e.key === "ArrowLeft" && i > 0) view.step = STEPS[i - 1].id;
  else if ((e.key === "m" || e.key === "M") && data.answers.full && data.answers.causal) view.mask = view.mask === "full" ? "causal" : "full";
  else return;
  render();
});

function render() {
  const step = STEPS.find((s) => s.id === view.step) ?? STEPS[0];
  const answer = data.answers[view.mask];
  drawn[view.mask] ??= sceneData(answer);
  view.focus = Math.min(view.focus, answer.tokens.length - 1);
  for (const b of steps.children) {
    b.classList.toggle("current", b.dataset.step === step.id);
    b.setAttribute("aria-pressed", String(b.dataset.step === step.id));
  }
  for (const mask of ["full", "causal"]) $(`mask-${mask}`).setAttribute("aria-pressed", String(mask === view.mask));
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

render();
document.body.dataset.ready = "true";
