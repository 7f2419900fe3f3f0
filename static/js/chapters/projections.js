// Chapter `projections`: where q, k and v come from. The "SELECT * FROM customers" example
// (NumPy's random seed 42, then X, W_Q, W_K, W_V drawn in that order): a token's embedding x times
// three learned matrices gives its query, key and value. Every number comes from GET /api/projections.

import { el } from "../dom.js";
import { fixed3, short } from "../format.js";
import { TokenProjection } from "../scene/xqkv.js";

const quote = (w) => `“${w}”`;
const NAMES = { q: "W_Q", k: "W_K", v: "W_V" };
const ROLE = {
  q: "what it is looking for (its query)",
  k: "what it offers to the others (its key)",
  v: "what it passes on when someone attends to it (its value)",
};
/** What training does to each matrix (here they are random). */
const TRAINED = {
  q: "training sets W_Q, together with W_K, so that a word's query meets the keys of the words it needs",
  k: "training sets W_K, together with W_Q, so that the right queries and keys meet",
  v: "training sets W_V so that what a word passes on is useful to the words that attend to it",
};

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
    title: `${kind} = x · ${NAMES[kind]}`,
    short: kind,
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      const x = a.x[t];
      const col = a[`w_${kind}`].map((row) => row[0]);
      const out = a[kind][t];
      return (
        `${quote(a.tokens[t])} multiplies its x by ${NAMES[kind]}, an 8 × 8 matrix, to say ${ROLE[kind]}. ` +
        `Each of the 8 numbers of ${kind} is x dotted with one column of ${NAMES[kind]}; the first is ` +
        `${term(x[0], col[0])} + ${term(x[1], col[1])} + … + ${term(x[7], col[7])} = ${fixed3(out[0])}. ` +
        `The result ${kind} = [${out.slice(0, 3).map(fixed3).join(", ")}, …] has length ‖${kind}‖ = ${fixed3(norm(out))} ` +
        `(the length of an arrow: √ of the sum of its squared numbers) where x had ‖x‖ = ${fixed3(norm(x))}: the matrix ` +
        `turns and stretches x. Here ${NAMES[kind]} is random; in a trained model, ${TRAINED[kind]}.`
      );
    },
  };
}

const STEPS = [
  {
    id: "x",
    figure: "#chapter-stage, [data-testid=proj-x]",
    title: "Each token starts as a vector x",
    short: "x",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      return (
        `This example has ${a.tokens.length} tokens (${a.tokens.map(quote).join(", ")}, the start of a database ` +
        `query), each an embedding x of ${a.x[0].length} numbers, drawn at random before anything else. ${quote(a.tokens[t])} is ` +
        `x = [${a.x[t].slice(0, 3).map(fixed3).join(", ")}, …]. On its own, x says what the token is, not what it ` +
        `should look for or offer: attention first makes three new vectors from it. The 3D view draws the first 3 of ` +
        `its 8 coordinates.`
      );
    },
  },
  projectionStep("q"),
  projectionStep("k"),
  projectionStep("v"),
  {
    id: "all",
    figure: "#chapter-stage, [data-testid=proj-q-all]", // Q; K and V follow below
    title: "Every token at once: Q = X · W_Q",
    short: "all",
    text: (a) =>
      `Stack the ${a.tokens.length} embeddings as the rows of X (${a.tokens.length} × 8) and one matrix product gives ` +
      `every query: Q = X · W_Q, and likewise K = X · W_K, V = X · W_V. Row i of Q is token i's q, exactly the ` +
      `vector of the steps before. The same three matrices serve every token and every position: a model learns ` +
      `3 × 8 × 8 = 192 numbers here, however long the sentence. These Q, K, V are the ones the attention view ` +
      `uses for the example "SELECT * FROM customers".`,
  },
];

function matrixTable(rows, { caption, rowNames = null, colNames = null, hotRow = null, testid = null }) {
  const t = el("table", { className: "ca-table ca-heat" });
  if (testid) t.dataset.testid = testid;
  t.append(el("caption", {}, caption));
  if (colNames) {
    const tr = el("tr");
    if (rowNames) tr.append(el("th"));
    for (const c of colNames) tr.append(el("th", { scope: "col" }, c));
    const thead = el("thead");
    thead.append(tr);
    t.append(thead);
  }
  const body = el("tbody");
  rows.forEach((row, i) => {
    const tr = el("tr", i === hotRow ? { className: "ca-hot" } : {});
    if (rowNames) tr.append(el("th", { scope: "row" }, rowNames[i]));
    row.forEach((v, j) => tr.append(el("td", testid ? { dataset: { testid: `${testid}-${i}-${j}` } } : {}, fixed3(v))));
    body.append(tr);
  });
  t.append(body);
  // a box that may scroll sideways on a phone: keyboard users reach it with Tab, then the arrow keys
  const box = el("div", { className: "ca-scroll", tabindex: "0", role: "region", "aria-label": t.querySelector("caption")?.textContent ?? "table" });
  box.append(t);
  return box;
}

const COLS = Array.from({ length: 8 }, (_, j) => String(j + 1));

function panelFor(a, t, stepId) {
  if (stepId === "x") return [matrixTable(a.x, { caption: "X: one embedding per row", rowNames: a.tokens, colNames: COLS, hotRow: t, testid: "proj-x" })];
  if (stepId === "all") {
    return ["q", "k", "v"].map((k) =>
      matrixTable(a[k], { caption: `${k.toUpperCase()} = X · ${NAMES[k]}`, rowNames: a.tokens, colNames: COLS, hotRow: t, testid: `proj-${k}-all` }),
    );
  }
  return [ // x and its product first (the step's text reads them), the 8 × 8 matrix after
    matrixTable([a.x[t]], { caption: `x of ${quote(a.tokens[t])}`, colNames: COLS }),
    matrixTable([a[stepId][t]], { caption: `${stepId} = x · ${NAMES[stepId]}`, colNames: COLS, testid: `proj-${stepId}` }),
    matrixTable(a[`w_${stepId}`], { caption: `${NAMES[stepId]} (8 × 8)`, rowNames: COLS, colNames: COLS, testid: `proj-w-${stepId}` }),
  ];
}

export default {
  id: "projections",
  title: "Where q, k and v come from",
  summary: "Each token's x times three learned matrices, W_Q, W_K and W_V, gives its query, key and value.",
  params: { tok: "3" }, // not "token": the classroom takes ?token= (the teacher token) out of the address bar
  steps: STEPS,

  async load(ctx) {
    return ctx.get("/api/projections");
  },

  mount(ctx) {
    const choices = el("div", { className: "ca-choices", role: "group", "aria-label": "Token" });
    const out = el("div", { className: "ca-out" });
    const note = el("p", { className: "ca-note" }, "The 3D view shows the first 3 of the 8 coordinates of each vector; the vectors shown together share one scale.");
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
    const t = tokenOf(a, ctx);
    const kinds = stepId === "x" ? ["x"] : stepId === "all" ? ["q", "k", "v"] : ["x", stepId];
    const items = [{ label: "token", value: `${t} (${a.tokens[t]})`, testid: "proj-token" }];
    return items.concat(kinds.flatMap((k) => {
      const row = k === "x" ? a.x[t] : a[k][t];
      return [
        { label: `${k}[0]`, value: row[0].toFixed(4), testid: `proj-${k}-0` },
        { label: `‖${k}‖`, value: norm(row).toFixed(4), testid: `proj-${k}-norm` },
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
