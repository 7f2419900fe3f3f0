// Chapter `projections`: where q, k and v come from. The "SELECT * FROM customers" example
// (NumPy's random seed 42, then X, W_Q, W_K, W_V drawn in that order): a token's embedding x times
// three learned matrices gives its query, key and value. Every number comes from GET /api/projections.
//
// Its words are in the catalogs (keys "chapter.projections.…"), read when drawn (chapters/CONTRACT.md:
// "Words in every language"); the example's tokens are code, the same in every language.

import { el } from "../dom.js";
import { fixed3, short } from "../format.js";
import { integer, listOf, t } from "../i18n.js";
import { TokenProjection } from "../scene/xqkv.js";
import { fixed4, quote } from "./widgets.js";

/** This chapter's message `key` (chapter.projections.<key>) with `values`. */
const say = (key, values) => t(`chapter.projections.${key}`, values);
const NAMES = { q: "W_Q", k: "W_K", v: "W_V" };
/** A vector's first three numbers and "…": "[0.497, −0.138, 0.648, …]". */
const head3 = (row) => `[${listOf([...row.slice(0, 3).map(fixed3), "…"])}]`;

function tokenOf(a, ctx) {
  const t = Number(ctx.params.tok);
  return Number.isInteger(t) && t >= 0 && t < a.tokens.length ? t : a.tokens.length - 1;
}

const paren = (v) => (v < 0 ? `(${short(v)})` : short(v));
const term = (a, b) => `${paren(a)}·${paren(b)}`;
const norm = (r) => Math.sqrt(r.reduce((s, v) => s + v * v, 0));

function projectionStep(kind) {
  return {
    id: kind,
    figure: `#chapter-stage, #chapter-panel .ca-out > :nth-child(-n + 2)`, // x and its product (the 8 × 8 matrix after)
    title: `${kind} = x · ${NAMES[kind]}`, // a formula: the same in every language
    short: kind,
    text: (a, ctx) => {
      const i = tokenOf(a, ctx);
      const x = a.x[i];
      const col = a[`w_${kind}`].map((row) => row[0]);
      const out = a[kind][i];
      return say("product.text", {
        token: a.tokens[i],
        kind,
        which: kind,
        W: NAMES[kind],
        sum: `${term(x[0], col[0])} + ${term(x[1], col[1])} + … + ${term(x[7], col[7])}`,
        first: fixed3(out[0]),
        result: head3(out),
        norm: fixed3(norm(out)),
        xnorm: fixed3(norm(x)),
      });
    },
  };
}

const STEPS = [
  {
    id: "x",
    figure: "#chapter-stage, [data-testid=proj-x]",
    get title() {
      return say("x.title");
    },
    short: "x",
    text: (a, ctx) => {
      const i = tokenOf(a, ctx);
      return say("x.text", {
        n: integer(a.tokens.length),
        tokens: a.tokens.map(quote).join(t("format.phraseSeparator")),
        d: integer(a.x[0].length),
        token: a.tokens[i],
        x: head3(a.x[i]),
      });
    },
  },
  projectionStep("q"),
  projectionStep("k"),
  projectionStep("v"),
  {
    id: "all",
    figure: "#chapter-stage, [data-testid=proj-q-all]", // Q; K and V follow below
    get title() {
      return say("all.title");
    },
    get short() {
      return say("all.short");
    },
    text: (a) => say("all.text", { n: integer(a.tokens.length) }),
  },
];

function matrixTable(rows, { caption, rowNames = null, colNames = null, hotRow = null, testid = null }) {
  const table = el("table", { className: "ca-table ca-heat" });
  if (testid) table.dataset.testid = testid;
  table.append(el("caption", {}, caption));
  if (colNames) {
    const tr = el("tr");
    if (rowNames) tr.append(el("th"));
    for (const c of colNames) tr.append(el("th", { scope: "col" }, c));
    const thead = el("thead");
    thead.append(tr);
    table.append(thead);
  }
  const body = el("tbody");
  rows.forEach((row, i) => {
    const tr = el("tr", i === hotRow ? { className: "ca-hot" } : {});
    if (rowNames) tr.append(el("th", { scope: "row" }, rowNames[i]));
    row.forEach((v, j) => tr.append(el("td", testid ? { dataset: { testid: `${testid}-${i}-${j}` } } : {}, fixed3(v))));
    body.append(tr);
  });
  table.append(body);
  // a box that may scroll sideways on a phone: keyboard users reach it with Tab, then the arrow keys
  const box = el("div", { className: "ca-scroll", tabindex: "0", role: "region", "aria-label": table.querySelector("caption")?.textContent ?? t("widget.table") });
  box.append(table);
  return box;
}

/** The 8 columns' numbers, in the page's digits. */
const cols = () => Array.from({ length: 8 }, (_, j) => integer(j + 1));

function panelFor(a, t, stepId) {
  const columns = cols();
  if (stepId === "x") return [matrixTable(a.x, { caption: say("caption.x"), rowNames: a.tokens, colNames: columns, hotRow: t, testid: "proj-x" })];
  if (stepId === "all") {
    return ["q", "k", "v"].map((k) =>
      matrixTable(a[k], { caption: `${k.toUpperCase()} = X · ${NAMES[k]}`, rowNames: a.tokens, colNames: columns, hotRow: t, testid: `proj-${k}-all` }),
    );
  }
  return [ // x and its product first (the step's text reads them), the 8 × 8 matrix after
    matrixTable([a.x[t]], { caption: say("caption.xOf", { token: a.tokens[t] }), colNames: columns }),
    matrixTable([a[stepId][t]], { caption: `${stepId} = x · ${NAMES[stepId]}`, colNames: columns, testid: `proj-${stepId}` }),
    matrixTable(a[`w_${stepId}`], { caption: `${NAMES[stepId]} (8 × 8)`, rowNames: columns, colNames: columns, testid: `proj-w-${stepId}` }),
  ];
}

export default {
  id: "projections",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { tok: "3" }, // not "token": the classroom takes ?token= (the teacher token) out of the address bar
  steps: STEPS,

  async load(ctx) {
    return ctx.get("/api/projections");
  },

  mount(ctx) {
    const choices = el("div", { className: "ca-choices", role: "group", "aria-label": say("choices") });
    const out = el("div", { className: "ca-out" });
    const note = el("p", { className: "ca-note" }, say("note"));
    ctx.panel.append(out, choices, note); // the tables first: the step's text speaks of them
    const scene = ctx.stage ? new TokenProjection(ctx.stage) : null;
    return {
      update(answer, stepId) {
        const t = tokenOf(answer, ctx);
        choices.replaceChildren(
          ...answer.tokens.map((tok, i) => {
            const b = el("button", { type: "button", "aria-pressed": String(i === t), dataset: { testid: `proj-token-${i}` } }, tok);
            b.addEventListener("click", () => ctx.setParams({ tok: String(i) }));
            return b;
          }),
        );
        out.replaceChildren(...panelFor(answer, t, stepId));
        scene?.update(answer, t, stepId); // the scene places the camera for one token or for all
      },
      dispose() {
        scene?.dispose();
      },
    };
  },

  numbers: (a, stepId, ctx) => {
    const i = tokenOf(a, ctx);
    const kinds = stepId === "x" ? ["x"] : stepId === "all" ? ["q", "k", "v"] : ["x", stepId];
    const items = [{ label: say("number.token"), value: `${integer(i)} (${a.tokens[i]})`, testid: "proj-token" }];
    return items.concat(kinds.flatMap((k) => {
      const row = k === "x" ? a.x[i] : a[k][i];
      return [
        { label: `${k}[0]`, value: fixed4(row[0]), testid: `proj-${k}-0` },
        { label: `‖${k}‖`, value: fixed4(norm(row)), testid: `proj-${k}-norm` },
      ];
    }));
  },

  code: (a, stepId, ctx) => {
    const t = tokenOf(a, ctx);
    const lines = [
      "import json",
      "import numpy as np",
      "",
      "np.random.seed(42)  # the example's random numbers: X first, then W_Q, W_K, W_V",
      "X = np.random.randn(4, 8)  # one embedding per token",
      "W_Q = np.random.randn(8, 8)",
      "W_K = np.random.randn(8, 8)",
      "W_V = np.random.randn(8, 8)",
      `tokens = ["SELECT", "*", "FROM", "customers"]`,
      `t = ${t}  # ${a.tokens[t]}`,
      "",
    ];
    if (stepId === "x") {
      lines.push("x = X[t]", 'print(json.dumps({"token": tokens[t], "x": x.tolist()}))');
    } else if (stepId === "all") {
      lines.push(
        "Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # every token at once",
        'print(json.dumps({"q": Q.tolist(), "k": K.tolist(), "v": V.tolist()}))',
      );
    } else {
      const W = NAMES[stepId];
      lines.push(
        "x = X[t]",
        `${stepId} = x @ ${W}`,
        `# the same, one number at a time: entry j is x dotted with column j of ${W}`,
        `${stepId}_loop = [sum(x[m] * ${W}[m, j] for m in range(8)) for j in range(8)]`,
        `assert np.allclose(${stepId}, ${stepId}_loop)`,
        `print(json.dumps({"token": tokens[t], "x": x.tolist(), "${stepId}": ${stepId}.tolist()}))`,
      );
    }
    return lines.join("\n");
  },
};
