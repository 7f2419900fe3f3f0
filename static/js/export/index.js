// Exports of the current view, from any chapter: the buttons in #export-bar.
//   PNG        the 3-D view at 2× its on-screen size, with its labels and a legend
//   SVG        the table as a heatmap (and "Table PNG", the same picture as a PNG)
//   CSV, JSON  one array of the server's answer (the stage picked beside them; every head of a 3-D one)
//   HTML       one standalone file of the view that opens offline (see html.js)
// Every number exported is the server's own; user text is data in every format.
import { postJson } from "../api.js";
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { currentView, onViewChange, whenReady } from "../pageview.js";
import { toCsv } from "./csv.js";
import { fileName, pngBlob, save } from "./download.js";
import { heatmapCanvas, heatmapSvg, svgText } from "./heatmap.js";
import { isAttention, standaloneHtml } from "./html.js";
import { scenePicture } from "./snapshot.js";
import { arrayNames, arrayTable } from "./table-data.js";

const bar = document.getElementById("export-bar");

/** A button of the bar: `id` names it (its test id), `label` and `title` are what it says. */
function button(id, label, title, action) {
  const b = el("button", { type: "button", className: "export-button", title, dataset: { testid: `export-${id}` } }, label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    status.textContent = "";
    try {
      await action();
    } catch (err) {
      status.textContent = t("export.failed", { reason: err.message });
      console.warn("export failed:", err);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

const picker = el("select", { dataset: { testid: "export-stage" } });
const status = el("span", { className: "export-status", role: "status", dataset: { testid: "export-status" } });

function view() {
  const v = currentView();
  if (!v || !v.answer) throw new Error(t("export.error.nothing"));
  return v;
}

/** The array the picker names, else the view's current stage, else the answer's first array. */
function chosen(v) {
  if (picker.value === ALL) throw new Error(t("export.error.pickOne"));
  const names = arrayNames(v.answer);
  if (names.includes(picker.value)) return picker.value;
  if (names.includes(v.stage)) return v.stage;
  if (!names.length) throw new Error(t("export.error.noTable"));
  return names[0];
}

const ALL = "*"; // the picker's choice for the whole answer (JSON)
const stem = (v, ...more) => fileName("attention", v.chapter, v.sentence ? "sentence" : v.example, v.step, ...more);

async function exportPng() {
  const v = view();
  const canvas = v.canvas ?? v.renderScene?.(1);
  if (!canvas) throw new Error(t("export.error.noPicture"));
  save(await pngBlob(scenePicture(v, 2)), `${stem(v, v.mask)}.png`);
}

function heatmap(v) {
  const name = chosen(v);
  const table = arrayTable(v.answer, name);
  const title = t("export.heatmapTitle", { name, head0: String(Boolean(table.heads)), mask: v.mask ?? "none" });
  return { name, svg: heatmapSvg(v.answer, name, title) };
}

async function exportSvg() {
  const v = view();
  const { name, svg } = heatmap(v);
  save(new Blob([svgText(svg)], { type: "image/svg+xml" }), `${stem(v, name)}.svg`);
}

async function exportTablePng() {
  const v = view();
  const { name, svg } = heatmap(v);
  save(await pngBlob(await heatmapCanvas(svg, 2)), `${stem(v, name)}.png`);
}

async function exportCsv() {
  const v = view();
  const name = chosen(v);
  save(new Blob([toCsv(v.answer, name)], { type: "text/csv;charset=utf-8" }), `${stem(v, name)}.csv`);
}

async function exportJson() {
  const v = view();
  if (picker.value === ALL) {
    save(new Blob([JSON.stringify(v.answer, null, 1)], { type: "application/json" }), `${stem(v, "answer")}.json`);
    return;
  }
  const name = chosen(v);
  const t = arrayTable(v.answer, name);
  const out = { stage: name, tokens: v.answer.tokens ?? null, mask: v.answer.mask ?? v.mask ?? null, rows: t.rows, columns: t.cols, values: v.answer[name] };
  save(new Blob([JSON.stringify(out, null, 1)], { type: "application/json" }), `${stem(v, name)}.json`);
}

/** Both masks' answers for the viewer, when the other one can be recomputed from the answer's q, k, v. */
export async function bothMasks(v) {
  const a = v.answer;
  const given = Object.entries(v.answers ?? {}).filter(([mask, answer]) => (mask === "full" || mask === "causal") && answer);
  const answers = { ...Object.fromEntries(given), [a.mask ?? v.mask ?? "full"]: a }; // (not a mask left for later: model.js)
  const other = answers.full ? "causal" : "full";
  if (!answers[other] && !a.mean_over?.length && !a.mistake && !(a.kind === "gpt2")) {
    const r = await postJson("/api/attention", { tokens: a.tokens, q: a.q, k: a.k, v: a.v, mask: other });
    if (r.ok) answers[other] = r.data;
  }
  return answers;
}

async function exportHtml() {
  const v = view();
  const app = document.getElementById("app");
  const assets = { viewer: app.dataset.viewerSrc, styles: app.dataset.stylesSrc };
  if (!assets.viewer || !assets.styles) throw new Error(t("export.error.noBundle"));
  let html;
  if (isAttention(v.answer)) {
    html = await standaloneHtml(v, await bothMasks(v), assets);
  } else {
    const canvas = v.canvas ? scenePicture(v, 1) : null;
    html = await standaloneHtml(v, null, assets, canvas ? canvas.toDataURL("image/png") : null);
  }
  save(new Blob([html], { type: "text/html;charset=utf-8" }), `${stem(v, v.mask)}.html`);
}

// the user chose an array (picker.dataset.picked): keep it; else follow the step's stage
picker.addEventListener("change", () => (picker.dataset.picked = "true"));

function fillPicker() {
  const v = currentView();
  const names = v?.answer ? arrayNames(v.answer) : [];
  const follow = names.includes(v?.stage) ? v.stage : names[0];
  const keep = picker.dataset.picked === "true" && [...names, ALL].includes(picker.value) ? picker.value : (follow ?? ALL);
  const values = [...names, ALL];
  if (values.join() !== [...picker.options].map((o) => o.value).join()) {
    picker.replaceChildren(...names.map((n) => new Option(n, n)), new Option(t("export.whole"), ALL));
  }
  picker.value = keep;
  bar.hidden = !v?.answer;
}

if (bar) {
  // made once the page's language is settled (whenReady: after main.js's startLanguage)
  whenReady(() => {
    picker.setAttribute("aria-label", t("export.picker"));
    bar.append(
      el("span", { className: "export-label", "aria-hidden": "true" }, t("export.label")),
      button("png", "PNG", t("export.png"), exportPng),
      picker,
      button("svg", "SVG", t("export.svg"), exportSvg),
      button("table-png", t("export.tablePng.label"), t("export.tablePng"), exportTablePng),
      button("csv", "CSV", t("export.csv"), exportCsv),
      button("json", "JSON", t("export.json"), exportJson),
      button("html", "HTML", t("export.html"), exportHtml),
      status,
    );
    fillPicker();
    onViewChange(() => fillPicker());
    // a chapter's answer arrives after its view changed: refill when the page says it is drawn
    new MutationObserver(() => fillPicker()).observe(document.getElementById("app"), {
      attributes: true,
      attributeFilter: ["data-ready", "data-step"],
    });
  });
}
