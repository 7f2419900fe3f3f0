// Chapter `scaling`: why attention divides by √d_k. With q and k of unit variance, q·k spreads
// like √d_k, and softmax of such wide scores turns one-hot; dividing by √d_k keeps the spread at
// 1 at any d_k. The server draws seeded vectors and measures. POST /api/scaling.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { BarGrid } from "../scene/bargrid.js";
import { scrollBox } from "./widgets.js";

const SVG = "http://www.w3.org/2000/svg";
const MIN = 2;
const MAX = 1024;

function dkOf(ctx) {
  const d = Number(ctx.params.dk);
  return Number.isInteger(d) ? d : 64;
}

const f3 = (x) => fixed3(x);
const HIDDEN = "The numbers that answer the class's question are hidden for now: think first.";
const keysNamed = (a) => Array.from({ length: a.keys }, (_, j) => `k${j + 1}`);

const STEPS = [
  {
    id: "spread",
    figure: "#chapter-stage, [data-testid=scaling-chart], #chapter-panel .ca-legend",
    title: "q·k spreads like √d_k",
    short: "spread",
    text: (a) =>
      `Take a query and a key whose ${a.d_k} numbers are drawn independently with mean 0 and variance 1. Their dot ` +
      `product adds ${a.d_k} products, each of variance 1, so its variance is d_k and its spread (standard ` +
      `deviation) is √d_k = ${f3(a.sqrt_d_k)}. The server drew ${a.samples.toLocaleString("en")} such pairs and measured ` +
      `${f3(a.std)} (mean ${f3(a.mean)}). So the scores grow with d_k, the number of coordinates, not with how ` +
      `well q and k agree: a head with more coordinates would get wilder scores for the same agreement. The chart ` +
      `shows the measured spread for d_k = 2 … 1024 against √d_k.`,
  },
  {
    id: "unscaled",
    figure: "#chapter-stage, [data-testid=scaling-row]", // the chart of every d_k follows
    title: "Without the division, softmax turns one-hot",
    short: "unscaled",
    text: (a, ctx) =>
      ctx?.withheld ? HIDDEN :
      `One query against ${a.keys} keys, d_k = ${a.d_k}: softmax of the raw scores gives its largest weight ` +
      `${f3(a.max_unscaled)}, and an entropy (how spread out the row is, in nats: natural log) of ${f3(a.entropy_unscaled)}; ` +
      `an even row of ${a.keys} has ln ${a.keys} = ${f3(a.ln_keys)}, a one-hot row 0. Over ${a.queries} queries the largest weight averages ` +
      `${f3(a.mean_max_unscaled)}. As d_k grows the scores spread further apart, exp() magnifies the gaps, and nearly ` +
      `all the weight lands on one key: the other keys get almost nothing, and training gets almost no signal (gradient) to change them by.`,
  },
  {
    id: "scaled",
    figure: "#chapter-stage, [data-testid=scaling-row]",
    title: "With ÷√d_k it stays soft",
    short: "scaled",
    text: (a, ctx) =>
      ctx?.withheld ? HIDDEN :
      `Dividing every score by √d_k = ${f3(a.sqrt_d_k)} brings their spread back to about 1 whatever d_k is. The same ` +
      `query's largest weight is now ${f3(a.max_scaled)} (entropy ${f3(a.entropy_scaled)} nats), and over ` +
      `${a.queries} queries it averages ${f3(a.mean_max_scaled)} instead of ${f3(a.mean_max_unscaled)}. The chart shows ` +
      `it for every d_k: unscaled, the largest weight climbs towards 1; scaled, it stays flat. That is the √d_k in ` +
      `softmax(Q·Kᵀ / √d_k).`,
  },
];

/** The softmax's numbers (the class's question while it answers). */
const softmaxNumbers = (a) => [
  { label: "max w, unscaled", value: a.max_unscaled.toFixed(4), testid: "scaling-max-unscaled" },
  { label: "max w, ÷√d_k", value: a.max_scaled.toFixed(4), testid: "scaling-max-scaled" },
  { label: "entropy (nats), unscaled", value: a.entropy_unscaled.toFixed(4), testid: "scaling-entropy-unscaled" },
  { label: "entropy (nats), ÷√d_k", value: a.entropy_scaled.toFixed(4), testid: "scaling-entropy-scaled" },
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
  for (const d of [2, 8, 32, 128, 512]) node("text", { x: x(d), y: H - B + 14, "text-anchor": "middle" }, String(d));
  node("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, "d_k (log scale)");
  for (const v of [0, yMax / 2, yMax]) node("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, v % 1 ? v.toFixed(1) : String(v));
  for (const s of series) {
    const pts = a.sweep.map((p) => `${x(p.d_k).toFixed(1)},${y(s.value(p)).toFixed(1)}`).join(" ");
    node("polyline", { points: pts, class: s.cls });
  }
  node("line", { x1: x(a.d_k), y1: T, x2: x(a.d_k), y2: y(0), class: "ca-now" });
  const desc = series.map((s) => `${s.label}: ${a.sweep.map((p) => `${p.d_k}: ${s.value(p).toFixed(3)}`).join(", ")}`).join("; ");
  svg.setAttribute("aria-label", `Chart. ${desc}`);
  const legend = el("ul", { className: "ca-legend" });
  series.forEach((s, i) => legend.append(el("li", { className: i ? "ca-key-b" : "ca-key-a" }, s.label)));
  legend.append(el("li", {}, `pink line: d_k = ${a.d_k}`));
  const box = el("div", { className: "ca-chart-box" });
  const row = el("div", { className: "ca-chart-row" }); // the legend beside the chart: both on the first screen
  row.append(svg, legend);
  box.append(el("p", { className: "ca-chart-title" }, yLabel), row);
  return box;
}

/** One query's row: its scores, and (unless the class is answering a question about them) its softmax both ways. */
function rowTable(a, hide = false) {
  const t = el("table", { className: "ca-table ca-heat", dataset: { testid: "scaling-row" } });
  t.append(el("caption", {}, `One query against ${a.keys} keys, d_k = ${a.d_k}`));
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
  title: "Why divide by √d_k",
  summary: "Dot products over d_k coordinates spread like √d_k; without the division softmax turns one-hot.",
  params: { dk: "64" },
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/scaling", { d_k: dkOf(ctx) });
  },

  mount(ctx) {
    const form = el("form", { className: "ca-form", dataset: { testid: "scaling-form" } });
    const slider = el("input", { type: "range", min: "1", max: "10", step: "1", "aria-label": "d_k, in powers of two", dataset: { testid: "scaling-slider" } });
    const number = el("input", { type: "number", min: String(MIN), max: String(MAX), step: "1", "aria-label": "d_k", dataset: { testid: "scaling-dk" } });
    form.append(el("label", { className: "ca-label" }, "d_k"), slider, number, el("button", { type: "submit" }, "Set"));
    const send = (d) => ctx.setParams({ dk: String(d) });
    slider.addEventListener("input", () => {
      number.value = String(2 ** Number(slider.value));
    });
    slider.addEventListener("change", () => send(2 ** Number(slider.value)));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      send(number.value.trim()); // the server checks it: 2 … 1024 (its 422 is shown)
    });
    const note = el("p", { className: "ca-note" }, `d_k from ${MIN} to ${MAX}: the slider steps in powers of two, the box takes any whole number.`);
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
              { label: "std of q·k", value: (p) => p.std, cls: "ca-line-a" },
              { label: "√d_k", value: (p) => p.sqrt_d_k, cls: "ca-line-b" },
            ], { yMax: 35, yLabel: "The spread of q·k against d_k", testid: "scaling-chart" }),
          );
        } else {
          parts.push( // the table first: this step's text reads its numbers
            chart(a, [
              { label: "unscaled", value: (p) => p.mean_max_unscaled, cls: "ca-line-a" },
              { label: "÷√d_k", value: (p) => p.mean_max_scaled, cls: "ca-line-b" },
            ], { yMax: 1, yLabel: `A row's largest weight (mean of ${a.queries} queries) against d_k`, testid: "scaling-chart" }),
          );
        }
        out.replaceChildren(...parts);
        if (!bars) return;
        const names = keysNamed(a);
        if (stepId === "spread" || hide) {
          const top = Math.max(...a.scores.map(Math.abs));
          bars.update(
            [
              { title: `|q·k|, up to ${f3(top)}`, values: [a.scores.map(Math.abs)], colNames: names },
              { title: "|q·k| / √d_k", values: [a.scores.map((s) => Math.abs(s) / a.sqrt_d_k)] },
            ],
            { max: top, height: 2.2, perRow: 1 },
          );
        } else {
          const grids = [{ title: `softmax(q·k): largest ${f3(a.max_unscaled)}`, values: [a.unscaled], colNames: names }];
          if (stepId === "scaled") grids.push({ title: `softmax(q·k / √d_k): largest ${f3(a.max_scaled)}`, values: [a.scaled] });
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
    { label: "d_k", value: String(a.d_k), testid: "scaling-d-k" },
    { label: "√d_k", value: a.sqrt_d_k.toFixed(4), testid: "scaling-sqrt" },
    { label: "std of q·k", value: a.std.toFixed(4), testid: "scaling-std" },
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
