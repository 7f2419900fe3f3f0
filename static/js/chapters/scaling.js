// Chapter `scaling`: why attention divides by √d_k. With q and k of unit variance, q·k spreads
// like √d_k, and softmax of such wide scores turns one-hot; dividing by √d_k keeps the spread at
// 1 at any d_k. The server draws seeded vectors and measures. POST /api/scaling.
//
// Its words are in the catalogs (keys "chapter.scaling.…"), read when drawn (chapters/CONTRACT.md:
// "Words in every language").

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { decimal, integer, language, listOf, locale, t } from "../i18n.js";
import { BarGrid } from "../scene/bargrid.js";
import { fixed4, scrollBox } from "./widgets.js";

const SVG = "http://www.w3.org/2000/svg";
const MIN = 2;
const MAX = 1024;

function dkOf(ctx) {
  const d = Number(ctx.params.dk);
  return Number.isInteger(d) ? d : 64;
}

const f3 = (x) => fixed3(x);
/** This chapter's message `key` (chapter.scaling.<key>) with `values`. */
const say = (key, values) => t(`chapter.scaling.${key}`, values);
/** A count with the language's thousands separator ("100,000", "100.000"). */
const grouped = (n) => (language() === "en" ? n.toLocaleString("en") : new Intl.NumberFormat(locale()).format(n));
const keysNamed = (a) => Array.from({ length: a.keys }, (_, j) => `k${j + 1}`);

const STEPS = [
  {
    id: "spread",
    figure: "#chapter-stage, [data-testid=scaling-chart], #chapter-panel .ca-legend",
    get title() {
      return say("spread.title");
    },
    get short() {
      return say("spread.short");
    },
    text: (a) =>
      say("spread.text", { dk: integer(a.d_k), sqrt: f3(a.sqrt_d_k), samples: grouped(a.samples), std: f3(a.std), mean: f3(a.mean) }),
  },
  {
    id: "unscaled",
    figure: "#chapter-stage, [data-testid=scaling-row]", // the chart of every d_k follows
    get title() {
      return say("unscaled.title");
    },
    get short() {
      return say("unscaled.short");
    },
    text: (a, ctx) =>
      ctx?.withheld
        ? t("lesson.hidden")
        : say("unscaled.text", {
            keys: integer(a.keys),
            dk: integer(a.d_k),
            max: f3(a.max_unscaled),
            entropy: f3(a.entropy_unscaled),
            lnKeys: f3(a.ln_keys),
            queries: integer(a.queries),
            meanMax: f3(a.mean_max_unscaled),
          }),
  },
  {
    id: "scaled",
    figure: "#chapter-stage, [data-testid=scaling-row]",
    get title() {
      return say("scaled.title");
    },
    get short() {
      return say("scaled.short");
    },
    text: (a, ctx) =>
      ctx?.withheld
        ? t("lesson.hidden")
        : say("scaled.text", {
            sqrt: f3(a.sqrt_d_k),
            max: f3(a.max_scaled),
            entropy: f3(a.entropy_scaled),
            queries: integer(a.queries),
            meanScaled: f3(a.mean_max_scaled),
            meanUnscaled: f3(a.mean_max_unscaled),
          }),
  },
];

/** The softmax's numbers (the class's question while it answers). */
const softmaxNumbers = (a) => [
  { label: say("number.maxUnscaled"), value: fixed4(a.max_unscaled), testid: "scaling-max-unscaled" },
  { label: say("number.maxScaled"), value: fixed4(a.max_scaled), testid: "scaling-max-scaled" },
  { label: say("number.entropyUnscaled"), value: fixed4(a.entropy_unscaled), testid: "scaling-entropy-unscaled" },
  { label: say("number.entropyScaled"), value: fixed4(a.entropy_scaled), testid: "scaling-entropy-scaled" },
];

/** A line chart over d_k = 2 … 1024 (log scale), built as SVG elements (no markup strings). */
function chart(a, series, { yMax, yLabel, testid }) {
  const W = 360;
  const H = 200;
  const L = 34;
  const R = 12;
  const T = 12;
  const B = 34;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "ca-chart");
  svg.setAttribute("role", "img");
  svg.dataset.testid = testid;
  const node = (tag, attrs, text = null) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== null) e.textContent = text;
    svg.append(e);
    return e;
  };
  const x = (d) => L + ((Math.log2(d) - 1) / 9) * (W - L - R);
  const y = (v) => T + (1 - v / yMax) * (H - T - B);
  node("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), class: "ca-axis-line" });
  node("line", { x1: L, y1: T, x2: L, y2: y(0), class: "ca-axis-line" });
  for (const d of [2, 8, 32, 128, 512]) node("text", { x: x(d), y: H - B + 14, "text-anchor": "middle" }, integer(d));
  node("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, say("chart.axis"));
  for (const v of [0, yMax / 2, yMax]) node("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, v % 1 ? decimal(v, 1) : integer(v));
  for (const s of series) {
    const pts = a.sweep.map((p) => `${x(p.d_k).toFixed(1)},${y(s.value(p)).toFixed(1)}`).join(" ");
    node("polyline", { points: pts, class: s.cls });
  }
  node("line", { x1: x(a.d_k), y1: T, x2: x(a.d_k), y2: y(0), class: "ca-now" });
  const desc = series.map((s) => `${s.label}: ${listOf(a.sweep.map((p) => `${integer(p.d_k)}: ${f3(s.value(p))}`))}`).join("; ");
  svg.setAttribute("aria-label", say("chart.label", { desc }));
  const legend = el("ul", { className: "ca-legend" });
  series.forEach((s, i) => legend.append(el("li", { className: i ? "ca-key-b" : "ca-key-a" }, s.label)));
  legend.append(el("li", {}, say("chart.now", { dk: integer(a.d_k) })));
  const box = el("div", { className: "ca-chart-box" });
  const row = el("div", { className: "ca-chart-row" }); // the legend beside the chart: both on the first screen
  row.append(svg, legend);
  box.append(el("p", { className: "ca-chart-title" }, yLabel), row);
  return box;
}

/** One query's row: its scores, and (unless the class is answering a question about them) its softmax both ways. */
function rowTable(a, hide = false) {
  const t = el("table", { className: "ca-table ca-heat", dataset: { testid: "scaling-row" } });
  t.append(el("caption", {}, say("table.caption", { keys: integer(a.keys), dk: integer(a.d_k) })));
  const head = el("tr");
  head.append(el("th"));
  for (const k of keysNamed(a)) head.append(el("th", { scope: "col" }, k));
  const thead = el("thead");
  thead.append(head);
  t.append(thead);
  const body = el("tbody");
  const rows = [
    ["q·k", a.scores, "score"],
    ["softmax", a.unscaled, "unscaled"],
    ["softmax ÷√d_k", a.scaled, "scaled"],
  ];
  for (const [name, row, id] of hide ? rows.slice(0, 1) : rows) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, name));
    row.forEach((v, j) => tr.append(el("td", { dataset: { testid: `scaling-${id}-${j}` } }, f3(v))));
    body.append(tr);
  }
  t.append(body);
  return scrollBox(t);
}

export default {
  id: "scaling",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { dk: "64" },
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/scaling", { d_k: dkOf(ctx) });
  },

  mount(ctx) {
    const form = el("form", { className: "ca-form", dataset: { testid: "scaling-form" } });
    const slider = el("input", { type: "range", min: "1", max: "10", step: "1", "aria-label": say("form.slider"), dataset: { testid: "scaling-slider" } });
    const number = el("input", { type: "number", min: String(MIN), max: String(MAX), step: "1", "aria-label": "d_k", dataset: { testid: "scaling-dk" } });
    form.append(el("label", { className: "ca-label" }, "d_k"), slider, number, el("button", { type: "submit" }, say("form.set")));
    const send = (d) => ctx.setParams({ dk: String(d) });
    slider.addEventListener("input", () => {
      number.value = String(2 ** Number(slider.value));
    });
    slider.addEventListener("change", () => send(2 ** Number(slider.value)));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      send(number.value.trim()); // the server checks it: 2 … 1024 (its 422 is shown)
    });
    const note = el("p", { className: "ca-note" }, say("form.note", { min: integer(MIN), max: integer(MAX) }));
    const out = el("div", { className: "ca-out" });
    ctx.panel.append(out, form, note); // the chart and the table first: the step's text speaks of them
    const bars = ctx.stage ? new BarGrid(ctx.stage) : null;
    let shownGrids = 0; // the grids the camera was placed for: 'scaled' adds one below the other
    return {
      update(a, stepId) {
        number.value = String(a.d_k);
        slider.value = String(Math.max(1, Math.min(10, Math.round(Math.log2(a.d_k)))));
        const hide = Boolean(ctx.withheld);
        const parts = [rowTable(a, hide)];
        if (stepId === "spread" || hide) {
          parts.unshift( // the chart first: this step's text is about it
            chart(a, [
              { label: say("series.std"), value: (p) => p.std, cls: "ca-line-a" },
              { label: "√d_k", value: (p) => p.sqrt_d_k, cls: "ca-line-b" },
            ], { yMax: 35, yLabel: say("chart.spread"), testid: "scaling-chart" }),
          );
        } else {
          parts.push( // the table first: this step's text reads its numbers
            chart(a, [
              { label: say("series.unscaled"), value: (p) => p.mean_max_unscaled, cls: "ca-line-a" },
              { label: "÷√d_k", value: (p) => p.mean_max_scaled, cls: "ca-line-b" },
            ], { yMax: 1, yLabel: say("chart.largest", { queries: integer(a.queries) }), testid: "scaling-chart" }),
          );
        }
        out.replaceChildren(...parts);
        if (!bars) return;
        const names = keysNamed(a);
        if (stepId === "spread" || hide) {
          const top = Math.max(...a.scores.map(Math.abs));
          bars.update(
            [
              { title: say("bars.scores", { top: f3(top) }), values: [a.scores.map(Math.abs)], colNames: names },
              { title: "|q·k| / √d_k", values: [a.scores.map((s) => Math.abs(s) / a.sqrt_d_k)] },
            ],
            { max: top, height: 2.2, perRow: 1 },
          );
        } else {
          const grids = [{ title: say("bars.unscaled", { max: f3(a.max_unscaled) }), values: [a.unscaled], colNames: names }];
          if (stepId === "scaled") grids.push({ title: say("bars.scaled", { max: f3(a.max_scaled) }), values: [a.scaled] });
          bars.update(grids, { max: 1, height: 2.2, perRow: 1 });
        }
        if (bars.last[0].length !== shownGrids) {
          // placed again when a grid comes or goes: a camera fitted closely to one grid (the projector
          // view refits on a resize) would leave the second past the canvas's edge
          const c = ctx.stage.container;
          const aspect = c.clientWidth / Math.max(1, c.clientHeight);
          const d = 7.5 / Math.min(1, aspect / 1.1);
          ctx.stage.look([0, d * 0.55, d * 0.85], [0, 0.6, 0]);
          shownGrids = bars.last[0].length;
          bars.update(...bars.last); // the names find their places for this camera
        }
      },
      dispose() {
        bars?.dispose();
      },
    };
  },

  numbers: (a, stepId, ctx) => [
    { label: "d_k", value: integer(a.d_k), testid: "scaling-d-k" },
    { label: "√d_k", value: fixed4(a.sqrt_d_k), testid: "scaling-sqrt" },
    { label: say("series.std"), value: fixed4(a.std), testid: "scaling-std" },
    ...(ctx?.withheld ? [] : softmaxNumbers(a)),
  ],

  code: (a) =>
    [
      "import json",
      "import numpy as np",
      "",
      `d_k = ${a.d_k}`,
      `rng = np.random.default_rng([${a.seed}, d_k])  # the server's draws, in its order`,
      `q = rng.standard_normal((${a.samples}, d_k))  # unit variance`,
      `k = rng.standard_normal((${a.samples}, d_k))`,
      `queries = rng.standard_normal((${a.queries}, d_k))`,
      `keys = rng.standard_normal((${a.keys}, d_k))`,
      "",
      "dots = (q * k).sum(axis=1)  # one q·k per pair",
      "",
      "",
      "def softmax(s):",
      "    e = np.exp(s - s.max())",
      "    return e / e.sum()",
      "",
      "",
      "def entropy(w):  # in nats (natural log); 0·ln 0 counts as 0",
      "    w = w[w > 0]",
      "    return float(-(w * np.log(w)).sum()) + 0.0",
      "",
      "",
      "scores = keys @ queries[0]",
      "unscaled, scaled = softmax(scores), softmax(scores / np.sqrt(d_k))",
      "print(json.dumps({",
      '    "std": float(dots.std()), "sqrt_d_k": float(np.sqrt(d_k)),',
      '    "max_unscaled": float(unscaled.max()), "max_scaled": float(scaled.max()),',
      '    "entropy_unscaled": entropy(unscaled), "entropy_scaled": entropy(scaled),',
      "}))",
    ].join("\n"),
};
