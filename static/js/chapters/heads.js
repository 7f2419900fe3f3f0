// Chapter `heads`: multi-head attention in full on a small seeded example (2 to 4 heads, each with
// its own W_Q, W_K, W_V; their z side by side; × W_O), then the real model's 12 heads of one layer
// through its own output projection. Every number comes from POST /api/multihead,
// GET /api/multihead/example and POST /api/multihead/model.

import { el } from "../dom.js";
import { fixed3, short } from "../format.js";
import { pyMatrix, pyNum, pyStr, pyStrings } from "../pycode.js";
import { HeadGrids } from "../scene/headgrids.js";
import { ANIMAL, argmax, matrixTable, picker, pySafetensors, quote, scroller, sentenceBox, vec } from "./widgets.js";

/** "Concat(head_1, head_2)" for two heads … four; "Concat(head_1, …, head_12)" for more. */
export function concatOf(h) {
  const heads = h <= 4 ? Array.from({ length: h }, (_, i) => `head_${i + 1}`).join(", ") : `head_1, …, head_${h}`;
  return `Concat(${heads})`;
}

function focusOf(answer, ctx) {
  const n = answer.ex.tokens.length;
  const f = Number(ctx.params.word);
  return Number.isInteger(f) && f >= 0 && f < n ? f : 1;
}

function modelFocus(answer, ctx) {
  const m = answer.model;
  if (!m) return 0;
  const f = ctx.params.tok === "" ? NaN : Number(ctx.params.tok);
  if (Number.isInteger(f) && f >= 0 && f < m.tokens.length) return f;
  const it = m.tokens.indexOf("it");
  return it >= 0 ? it : 0;
}

const STEPS = [
  {
    id: "heads",
    figure: "#chapter-stage, [data-testid=head-weights-0]",
    title: "Each head asks its own question",
    short: "heads",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const w = a.mh.heads.weights;
      const tops = w.map((head, i) => {
        const j = argmax(head[f]);
        return `head ${i + 1} gives ${fixed3(head[f][j])} to ${quote(a.ex.tokens[j])}`;
      });
      return (
        `Here ${w.length} heads read the same ${a.ex.tokens.length} words (x has ${a.ex.x[0].length} numbers a word), but each ` +
        `has its own W_Q, W_K and W_V (${a.ex.x[0].length} × ${a.ex.w_q[0][0].length} each), so each makes its own queries and keys ` +
        `and spreads its attention its own way. For ${quote(a.ex.tokens[f])}: ${tops.join("; ")}. ` +
        "Inside a head nothing is new: it is the five steps of one attention, on its own q, k and v. " +
        "Adding a head adds a new set of matrices; the heads already there keep theirs."
      );
    },
  },
  {
    id: "concat",
    figure: "#chapter-stage, [data-testid=heads-concat-table]",
    title: "Concat: the heads' z side by side",
    short: "concat",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const h = a.mh.heads.output.length;
      const dv = a.mh.heads.output[0][0].length;
      const parts = a.mh.heads.output.map((z) => `[${z[f].map(short).join(", ")}]`).join(" | ");
      return (
        `Each head hands back a z of ${dv} numbers for every word. Concat does not add or mix them: it writes them one after ` +
        `the other, so each word now has ${h} × ${dv} = ${h * dv} numbers. For ${quote(a.ex.tokens[f])}: ${parts}.`
      );
    },
  },
  {
    id: "wo",
    figure: "#chapter-stage, [data-testid=heads-formula], [data-testid=heads-concat-table]",
    title: "× W_O: the heads mixed back into one vector",
    short: "× W_O",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const h = a.mh.heads.output.length;
      return (
        `W_O is one learned matrix of ${a.ex.w_o.length} × ${a.ex.w_o[0].length}: it takes the ${a.ex.w_o.length} concatenated numbers ` +
        `back to the model's width (${a.ex.w_o[0].length}), and each output number draws on every head. ` +
        `MultiHead(Q, K, V) = ${concatOf(h)} · W_O; for ${quote(a.ex.tokens[f])} that is ` +
        `[${a.mh.concat[f].map(short).join(", ")}] · W_O = [${a.mh.output[f].map(short).join(", ")}].`
      );
    },
  },
  {
    id: "model",
    figure: "#chapter-stage, [data-testid=heads-model-out]",
    title: "A real model: all its heads, then its own W_O",
    short: "real model",
    text: (a, ctx) => {
      const m = a.model;
      if (!m) return "The model could not be run: see the message above.";
      const f = modelFocus(a, ctx);
      const c = m.concat[0].length;
      const j = argmax(m.weights[1][f]);
      return (
        `${m.model}, layer ${m.layer}: ${m.heads} heads of ${m.head_size} numbers each. Their z are concatenated into ` +
        `${m.heads} × ${m.head_size} = ${c} numbers per token and multiplied by the model's own W_O ` +
        `(${c} × ${m.output[0].length}, plus a bias). The result is exactly what the real model adds back ` +
        `to its input at this point (checked against the model's original software to 4 decimal places). ` +
        `Each head looks elsewhere (the 3D view: one row per head, ${quote(m.tokens[f])}'s weights): head 2 gives ` +
        `${fixed3(m.weights[1][f][j])} to ${quote(m.tokens[j])}. Heads are numbered 1 to ${m.heads} here, as in the ` +
        `formula; the attention view's head menu counts from 0 and calls this one head 1.`
      );
    },
  },
];

function exampleBody(a) {
  return { tokens: a.tokens, x: a.x, w_q: a.w_q, w_k: a.w_k, w_v: a.w_v, w_o: a.w_o };
}

function numbers(a, stepId, ctx) {
  const f = focusOf(a, ctx);
  if (stepId === "model") {
    const m = a.model;
    if (!m) return [];
    const t = modelFocus(a, ctx);
    return [
      { label: "token", value: quote(m.tokens[t]), testid: "heads-model-token" },
      { label: "concat width", value: String(m.concat[0].length), testid: "heads-model-width" },
      { label: "output, first numbers", value: vec(m.output[t]), testid: "heads-model-output" },
    ];
  }
  const out = [
    { label: "word", value: quote(a.ex.tokens[f]), testid: "heads-word" },
    { label: "heads", value: String(a.mh.heads.weights.length), testid: "heads-count" },
  ];
  if (stepId === "heads") {
    a.mh.heads.weights.forEach((w, i) => {
      const j = argmax(w[f]);
      out.push({ label: `head ${i + 1} looks most at`, value: `${quote(a.ex.tokens[j])} ${fixed3(w[f][j])}`, testid: `heads-top-${i}` });
    });
  }
  if (stepId === "concat") out.push({ label: "concat", value: vec(a.mh.concat[f], 12), testid: "heads-concat" });
  if (stepId === "wo") out.push({ label: "output", value: vec(a.mh.output[f], 12), testid: "heads-output" });
  return out;
}

function code(a, stepId, ctx) {
  if (stepId === "model") return modelCode(a, ctx);
  const ex = a.ex;
  const h = ex.w_q.length;
  const per = (name, w) => w.map((m, i) => `    ${pyMatrix(m, "        ")},  # head ${i + 1}`).join("\n");
  const result = { heads: "weights", concat: "concat", wo: "output" }[stepId];
  return [
    "import json",
    "import numpy as np",
    "",
    `words = ${pyStrings(ex.tokens)}`,
    `X = ${pyMatrix(ex.x)}  # one row per word, d_model = ${ex.x[0].length}`,
    `W_Q = np.array([\n${per("W_Q", ex.w_q)}\n])  # ${h} heads × d_model × d_k`,
    `W_K = np.array([\n${per("W_K", ex.w_k)}\n])`,
    `W_V = np.array([\n${per("W_V", ex.w_v)}\n])`,
    `W_O = ${pyMatrix(ex.w_o)}  # (h·d_v) × d_model`,
    `causal = ${a.mask === "causal" ? "True" : "False"}`,
    "",
    "",
    "def attention(Q, K, V):",
    "    n, d_k = Q.shape",
    "    s = Q @ K.T / np.sqrt(d_k)",
    "    if causal:",
    "        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)",
    "    e = np.exp(s - s.max(axis=1, keepdims=True))",
    "    w = e / e.sum(axis=1, keepdims=True)  # each row sums to 1",
    "    return w, w @ V",
    "",
    "",
    `heads = [attention(X @ W_Q[i], X @ W_K[i], X @ W_V[i]) for i in range(${h})]`,
    "weights = np.array([w for w, _ in heads])  # h × n × n",
    "concat = np.concatenate([z for _, z in heads], axis=1)  # n × (h·d_v): head 1's z, then head 2's, …",
    "output = concat @ W_O  # MultiHead = Concat(head_1, …, head_h) · W_O",
    `print(json.dumps({"step": ${pyStr(stepId)}, "${result}": ${result}.round(10).tolist()}))`,
  ].join("\n");
}

function modelCode(a, ctx) {
  const m = a.model;
  if (!m || m.kind !== "bert" || m.model !== "all-MiniLM-L6-v2") return "";
  const t = modelFocus(a, ctx);
  const zs = m.z.map((z) => z[t]);
  return [
    ...pySafetensors(),
    `# layer ${m.layer}: each head's z for ${JSON.stringify(m.tokens[t])} (token ${t}), from the server`,
    "z = np.array([",
    ...zs.map((row, i) => `    [${row.map(pyNum).join(", ")}],  # head ${i + 1}`),
    "])",
    "concat = z.reshape(-1)  # 12 heads × 32 = 384 numbers, head 1's first",
    `W_O = W(${pyStr(m.w_o_name + ".weight")})  # torch stores (out, in)`,
    `b_O = W(${pyStr(m.w_o_name + ".bias")})`,
    "output = concat @ W_O.T + b_O  # the model's own output projection",
    'print(json.dumps({"step": "model", "token": ' + t + ', "output": output.round(8).tolist()}))',
  ].join("\n");
}

function mount(ctx) {
  const panel = ctx.panel;
  const controls = el("div", { className: "chapter-controls" });
  const body = el("div", { className: "heads-body", dataset: { testid: "heads-body" } });
  panel.append(body, controls); // what the step's text speaks of first, the controls after
  const grids = ctx.stage ? new HeadGrids(ctx.stage) : null;
  if (ctx.stage) ctx.stage.autoFit = true; // the camera fitted to the drawing (issue 17)

  function drawControls(a, stepId) {
    const items = [];
    if (stepId === "model") {
      const m = a.model;
      items.push(sentenceBox(ctx.params.sentence, (s) => ctx.setParams({ sentence: s, tok: "" }), "heads-sentence"));
      const layers = m?.layers ?? 6;
      items.push(picker("layer", Array.from({ length: layers }, (_, l) => [l, String(l)]), ctx.params.layer, (v) => ctx.setParams({ layer: v }), "heads-layer"));
      if (m) items.push(picker("token", m.tokens.map((t, i) => [i, `${i}: ${t}`]), modelFocus(a, ctx), (v) => ctx.setParams({ tok: v }), "heads-token"));
    } else {
      items.push(picker("heads", [2, 3, 4].map((h) => [h, String(h)]), ctx.params.heads, (v) => ctx.setParams({ heads: v }), "heads-heads"));
      items.push(picker("mask", [["full", "full"], ["causal", "causal"]], ctx.params.mask, (v) => ctx.setParams({ mask: v }), "heads-mask"));
      items.push(picker("word", a.ex.tokens.map((t, i) => [i, t]), focusOf(a, ctx), (v) => ctx.setParams({ word: v }), "heads-wordpick"));
      const redraw = el("button", { type: "button", dataset: { testid: "heads-reseed" } }, `New weights (seed ${a.ex.seed})`);
      redraw.addEventListener("click", () => ctx.setParams({ seed: String((Number(ctx.params.seed) || 0) + 1) }));
      items.push(redraw);
    }
    controls.replaceChildren(...items);
  }

  function drawExample(a, stepId) {
    const f = focusOf(a, ctx);
    const ex = a.ex;
    const h = ex.w_q.length;
    const dk = ex.w_q[0][0].length;
    const cols = Array.from({ length: dk }, (_, i) => String(i + 1));
    if (stepId === "heads") {
      const cards = ex.w_q.map((_, i) => {
        const card = el("div", { className: `head-card group-${i % 6}`, dataset: { testid: `head-card-${i}` } });
        card.append(el("h3", {}, `head ${i + 1}`));
        card.append(
          scroller(
            matrixTable(a.mh.heads.weights[i], {
              caption: `weights of head ${i + 1} (rows: queries)`,
              rowNames: ex.tokens,
              colNames: ex.tokens,
              shade: true,
              testid: `head-weights-${i}`,
            }),
          ),
        );
        const ws = el("div", { className: "head-weights" });
        for (const [name, w] of [["W_Q", ex.w_q[i]], ["W_K", ex.w_k[i]], ["W_V", ex.w_v[i]]]) {
          ws.append(matrixTable(w, { caption: `${name}${i + 1}`, colNames: cols }));
        }
        card.append(scroller(ws));
        return card;
      });
      const row = el("div", { className: "head-cards" });
      row.append(...cards);
      body.replaceChildren(row);
    } else {
      const groups = Array.from({ length: h }, (_, i) => ({ title: `head ${i + 1}`, span: dk, index: i }));
      const concatCols = Array.from({ length: h * dk }, (_, i) => `z${Math.floor(i / dk) + 1}.${(i % dk) + 1}`);
      const concat = matrixTable(a.mh.concat, { caption: `${concatOf(h)}: ${ex.tokens.length} × ${h * dk}`, rowNames: ex.tokens, colNames: concatCols, groups, testid: "heads-concat-table" });
      if (stepId === "concat") {
        body.replaceChildren(scroller(concat));
      } else {
        const formula = el("p", { className: "formula", dataset: { testid: "heads-formula" } });
        formula.textContent =
          `MultiHead(Q, K, V) = ${concatOf(h)} · W_O\n` +
          `${quote(ex.tokens[f])}: [${a.mh.heads.output.map((z) => z[f].map(short).join(", ")).join(" | ")}] · W_O = [${a.mh.output[f].map(short).join(", ")}]`;
        const wo = matrixTable(ex.w_o, { caption: `W_O: ${h * dk} × ${ex.w_o[0].length}`, rowNames: concatCols, shade: true });
        const out = matrixTable(a.mh.output, { caption: `MultiHead output: ${ex.tokens.length} × ${ex.w_o[0].length}`, rowNames: ex.tokens, testid: "heads-output-table" });
        const row = el("div", { className: "head-cards" });
        row.append(scroller(concat), scroller(wo), scroller(out));
        body.replaceChildren(formula, row);
      }
    }
    if (!grids) return;
    const zCols = Array.from({ length: h * dk }, (_, i) => String((i % dk) + 1));
    const headGroups = Array.from({ length: h }, (_, i) => ({ title: `head ${i + 1}`, span: dk }));
    const concatGrid = { title: `${concatOf(h)}: ${ex.tokens.length} × ${h * dk}`, weights: a.mh.concat, signed: true, colNames: zCols, groups: headGroups };
    const dims = Array.from({ length: ex.w_o[0].length }, (_, i) => String(i + 1));
    if (stepId === "heads") {
      grids.update(
        a.mh.heads.weights.map((w, i) => ({ title: `head ${i + 1}: weights`, weights: w })),
        ex.tokens,
        { focus: f, perRow: 4 },
      );
    } else if (stepId === "concat") {
      grids.update([concatGrid], ex.tokens, { focus: f, perRow: 1 });
    } else {
      grids.update(
        [
          { ...concatGrid, title: "Concat", groups: undefined },
          { title: `W_O: ${h * dk} × ${dims.length}`, weights: ex.w_o, signed: true, colNames: dims, noFocus: true },
          { title: `output: ${ex.tokens.length} × ${dims.length}`, weights: a.mh.output, signed: true, colNames: dims },
        ],
        ex.tokens,
        { focus: f, perRow: 3, between: ["·", "="] },
      );
    }
  }

  function drawModel(a) {
    const m = a.model;
    if (!m) {
      body.replaceChildren(el("p", { className: "error-banner" }, a.modelError ?? "The model could not be run."));
      return;
    }
    const t = modelFocus(a, ctx);
    const heads = el("div", { className: "head-strip", dataset: { testid: "heads-model-z" } });
    const show = 4;
    const rows = m.z.map((z, i) => [...z[t].slice(0, show)]);
    heads.append(
      matrixTable(rows, {
        caption: `z of ${quote(m.tokens[t])}, first ${show} of ${m.head_size} numbers per head`,
        rowNames: m.z.map((_, i) => `head ${i + 1}`), // from 1, as the toy heads and the formula count them
        colNames: Array.from({ length: show }, (_, i) => String(i + 1)),
      }),
    );
    const out = matrixTable([m.output[t].slice(0, 8)], {
      caption: `Concat · W_O + b for ${quote(m.tokens[t])}: first 8 of ${m.output[t].length}`,
      colNames: Array.from({ length: 8 }, (_, i) => String(i + 1)),
      testid: "heads-model-out",
    });
    body.replaceChildren(scroller(out), scroller(heads)); // the result first, then each head's part of it
    // one row per head: where the chosen token's attention goes in each (a 12 × n table, not 12 n × n ones)
    grids?.update(
      [{ title: `${quote(m.tokens[t])} in each head of layer ${m.layer}`, weights: m.weights.map((w) => w[t]), rowNames: m.weights.map((_, i) => `head ${i + 1}`), colNames: m.tokens }],
      m.tokens,
      { perRow: 1 },
    );
  }

  return {
    update(a, stepId) {
      drawControls(a, stepId);
      if (stepId === "model") drawModel(a);
      else drawExample(a, stepId);
    },
    dispose() {
      grids?.dispose();
      controls.remove();
      body.remove();
    },
  };
}

export default {
  id: "heads",
  title: "Many heads, then W_O",
  summary: "Several attentions side by side, glued together and mixed by W_O; then a real model's 12 heads.",
  params: { heads: "2", seed: "7", mask: "full", word: "1", sentence: ANIMAL, layer: "3", tok: "" },
  steps: STEPS,
  async load(ctx) {
    const p = ctx.params;
    const heads = Math.min(4, Math.max(2, Number(p.heads) || 2));
    const ex = await ctx.get(`/api/multihead/example?heads=${heads}&seed=${encodeURIComponent(p.seed)}`);
    const mask = p.mask === "causal" ? "causal" : "full";
    const [mh, model] = await Promise.all([
      ctx.post("/api/multihead", { ...exampleBody(ex), mask }),
      ctx.post("/api/multihead/model", { sentence: p.sentence, layer: Number(p.layer) || 0 }).catch((err) => {
        if (err?.name === "AbortError") throw err;
        return { error: err?.message ?? String(err) };
      }),
    ]);
    const ok = model && !model.error;
    return { ex, mh, mask, model: ok ? model : null, modelError: ok ? null : model?.error };
  },
  mount,
  numbers,
  code,
};
