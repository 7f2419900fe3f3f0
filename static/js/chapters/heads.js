// Chapter `heads`: multi-head attention in full on a small seeded example (2 to 4 heads, each with
// its own W_Q, W_K, W_V; their z side by side; × W_O), then the real model's 12 heads of one layer
// through its own output projection. Every number comes from POST /api/multihead,
// GET /api/multihead/example and POST /api/multihead/model.
//
// Its words are in the catalogs (keys "chapter.heads.…"), read when drawn (chapters/CONTRACT.md:
// "Words in every language"). The small example's words ("the cat ate fish") are shown in the
// page's language where it carries them word for word (example.heads-toy.tokens); the real
// model reads its sentence as typed.

import { el } from "../dom.js";
import { fixed3, short } from "../format.js";
import { integer, listOf, t } from "../i18n.js";
import { pyMatrix, pyNum, pyStr, pyStrings } from "../pycode.js";
import { HeadGrids } from "../scene/headgrids.js";
import { ANIMAL, argmax, exampleNote, exampleWords, matrixTable, picker, pySafetensors, quote, scroller, sentenceBox, vec } from "./widgets.js";

/** This chapter's message `key` (chapter.heads.<key>) with `values`. */
const say = (key, values) => t(`chapter.heads.${key}`, values);
/** "head 3", in the page's language (the toy's heads and the formula count from 1). */
const headName = (i) => say("head", { i: integer(i) });
/** The small example's words as the server sends them, and as the page shows them. */
const TOY = "heads-toy"; // its id in the catalogs (example.heads-toy.…): "the cat ate fish"
const toyWords = (tokens) => exampleWords(TOY, tokens);
/** A list of short numbers in brackets: "[0.5, −1.2]" ("[0,5; −1,2]" where the decimal sign is a comma). */
const shortList = (row) => `[${listOf(row.map(short))}]`;

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
    get title() {
      return say("heads.title");
    },
    get short() {
      return say("heads.short");
    },
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const words = toyWords(a.ex.tokens);
      const w = a.mh.heads.weights;
      const tops = w.map((head, i) => {
        const j = argmax(head[f]);
        return say("heads.top", { head: headName(i + 1), w: fixed3(head[f][j]), word: words[j] });
      });
      const note = exampleNote(TOY, a.ex.tokens);
      return (
        say("heads.text", {
          h: w.length,
          n: integer(words.length),
          d: integer(a.ex.x[0].length),
          dk: integer(a.ex.w_q[0][0].length),
          word: words[f],
          tops: tops.join(t("lesson.clauseSeparator")),
        }) + (note ? ` ${note}` : "")
      );
    },
  },
  {
    id: "concat",
    figure: "#chapter-stage, [data-testid=heads-concat-table]",
    get title() {
      return say("concat.title");
    },
    get short() {
      return say("concat.short");
    },
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const h = a.mh.heads.output.length;
      const dv = a.mh.heads.output[0][0].length;
      const parts = a.mh.heads.output.map((z) => shortList(z[f])).join(" | ");
      return say("concat.text", { dv: integer(dv), h: integer(h), total: integer(h * dv), word: toyWords(a.ex.tokens)[f], parts });
    },
  },
  {
    id: "wo",
    figure: "#chapter-stage, [data-testid=heads-formula], [data-testid=heads-concat-table]",
    get title() {
      return say("wo.title");
    },
    short: "× W_O",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const h = a.mh.heads.output.length;
      return say("wo.text", {
        rows: integer(a.ex.w_o.length),
        cols: integer(a.ex.w_o[0].length),
        formula: `MultiHead(Q, K, V) = ${concatOf(h)} · W_O`, // formulas whole: one piece each in a right-to-left sentence
        word: toyWords(a.ex.tokens)[f],
        product: `${shortList(a.mh.concat[f])} · W_O = ${shortList(a.mh.output[f])}`,
      });
    },
  },
  {
    id: "model",
    figure: "#chapter-stage, [data-testid=heads-model-out]",
    get title() {
      return say("model.title");
    },
    get short() {
      return say("model.short");
    },
    text: (a, ctx) => {
      const m = a.model;
      if (!m) return say("model.none");
      const f = modelFocus(a, ctx);
      const c = m.concat[0].length;
      const j = argmax(m.weights[1][f]);
      return say("model.text", {
        model: m.model,
        layer: integer(m.layer),
        heads: integer(m.heads),
        size: integer(m.head_size),
        c: integer(c),
        out: integer(m.output[0].length),
        token: m.tokens[f],
        w: fixed3(m.weights[1][f][j]),
        target: m.tokens[j],
      });
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
      { label: say("number.token"), value: quote(m.tokens[t]), testid: "heads-model-token" },
      { label: say("number.width"), value: integer(m.concat[0].length), testid: "heads-model-width" },
      { label: say("number.modelOutput"), value: vec(m.output[t]), testid: "heads-model-output" },
    ];
  }
  const words = toyWords(a.ex.tokens);
  const out = [
    { label: say("number.word"), value: quote(words[f]), testid: "heads-word" },
    { label: say("number.heads"), value: integer(a.mh.heads.weights.length), testid: "heads-count" },
  ];
  if (stepId === "heads") {
    a.mh.heads.weights.forEach((w, i) => {
      const j = argmax(w[f]);
      out.push({ label: say("number.looks", { head: headName(i + 1) }), value: `${quote(words[j])} ${fixed3(w[f][j])}`, testid: `heads-top-${i}` });
    });
  }
  if (stepId === "concat") out.push({ label: "concat", value: vec(a.mh.concat[f], 12), testid: "heads-concat" });
  if (stepId === "wo") out.push({ label: say("number.output"), value: vec(a.mh.output[f], 12), testid: "heads-output" });
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
      items.push(picker(say("pick.layer"), Array.from({ length: layers }, (_, l) => [l, integer(l)]), ctx.params.layer, (v) => ctx.setParams({ layer: v }), "heads-layer"));
      if (m) items.push(picker(say("pick.token"), m.tokens.map((tok, i) => [i, `${integer(i)}: ${tok}`]), modelFocus(a, ctx), (v) => ctx.setParams({ tok: v }), "heads-token"));
    } else {
      items.push(picker(say("pick.heads"), [2, 3, 4].map((h) => [h, integer(h)]), ctx.params.heads, (v) => ctx.setParams({ heads: v }), "heads-heads"));
      items.push(picker(say("pick.mask"), ["full", "causal"].map((mask) => [mask, say("pick.maskName", { mask })]), ctx.params.mask, (v) => ctx.setParams({ mask: v }), "heads-mask"));
      items.push(picker(say("pick.word"), toyWords(a.ex.tokens).map((word, i) => [i, word]), focusOf(a, ctx), (v) => ctx.setParams({ word: v }), "heads-wordpick"));
      const redraw = el("button", { type: "button", dataset: { testid: "heads-reseed" } }, say("reseed", { seed: integer(a.ex.seed) }));
      redraw.addEventListener("click", () => ctx.setParams({ seed: String((Number(ctx.params.seed) || 0) + 1) }));
      items.push(redraw);
    }
    controls.replaceChildren(...items);
  }

  function drawExample(a, stepId) {
    const f = focusOf(a, ctx);
    const ex = a.ex;
    const words = toyWords(ex.tokens);
    const h = ex.w_q.length;
    const dk = ex.w_q[0][0].length;
    const cols = Array.from({ length: dk }, (_, i) => integer(i + 1));
    if (stepId === "heads") {
      const cards = ex.w_q.map((_, i) => {
        const card = el("div", { className: `head-card group-${i % 6}`, dataset: { testid: `head-card-${i}` } });
        card.append(el("h3", {}, headName(i + 1)));
        card.append(
          scroller(
            matrixTable(a.mh.heads.weights[i], {
              caption: say("caption.weights", { head: headName(i + 1) }),
              rowNames: words,
              colNames: words,
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
      const groups = Array.from({ length: h }, (_, i) => ({ title: headName(i + 1), span: dk, index: i }));
      const concatCols = Array.from({ length: h * dk }, (_, i) => `z${Math.floor(i / dk) + 1}.${(i % dk) + 1}`);
      const concat = matrixTable(a.mh.concat, { caption: `${concatOf(h)}: ${ex.tokens.length} × ${h * dk}`, rowNames: words, colNames: concatCols, groups, testid: "heads-concat-table" });
      if (stepId === "concat") {
        body.replaceChildren(scroller(concat));
      } else {
        const formula = el("p", { className: "formula", dataset: { testid: "heads-formula" } });
        formula.textContent =
          `MultiHead(Q, K, V) = ${concatOf(h)} · W_O\n` +
          `${quote(words[f])}: [${a.mh.heads.output.map((z) => listOf(z[f].map(short))).join(" | ")}] · W_O = ${shortList(a.mh.output[f])}`;
        const wo = matrixTable(ex.w_o, { caption: `W_O: ${h * dk} × ${ex.w_o[0].length}`, rowNames: concatCols, shade: true });
        const out = matrixTable(a.mh.output, { caption: say("caption.output", { n: integer(ex.tokens.length), d: integer(ex.w_o[0].length) }), rowNames: words, testid: "heads-output-table" });
        const row = el("div", { className: "head-cards" });
        row.append(scroller(concat), scroller(wo), scroller(out));
        body.replaceChildren(formula, row);
      }
    }
    if (!grids) return;
    const zCols = Array.from({ length: h * dk }, (_, i) => integer((i % dk) + 1));
    const headGroups = Array.from({ length: h }, (_, i) => ({ title: headName(i + 1), span: dk }));
    const concatGrid = { title: `${concatOf(h)}: ${ex.tokens.length} × ${h * dk}`, weights: a.mh.concat, signed: true, colNames: zCols, groups: headGroups };
    const dims = Array.from({ length: ex.w_o[0].length }, (_, i) => integer(i + 1));
    if (stepId === "heads") {
      grids.update(
        a.mh.heads.weights.map((w, i) => ({ title: say("grid.weights", { head: headName(i + 1) }), weights: w })),
        words,
        { focus: f, perRow: 4 },
      );
    } else if (stepId === "concat") {
      grids.update([concatGrid], words, { focus: f, perRow: 1 });
    } else {
      grids.update(
        [
          { ...concatGrid, title: "Concat", groups: undefined },
          { title: `W_O: ${h * dk} × ${dims.length}`, weights: ex.w_o, signed: true, colNames: dims, noFocus: true },
          { title: say("grid.output", { n: integer(ex.tokens.length), d: integer(dims.length) }), weights: a.mh.output, signed: true, colNames: dims },
        ],
        words,
        { focus: f, perRow: 3, between: ["·", "="] },
      );
    }
  }

  function drawModel(a) {
    const m = a.model;
    if (!m) {
      body.replaceChildren(el("p", { className: "error-banner" }, a.modelError ?? say("model.failed")));
      return;
    }
    const t = modelFocus(a, ctx);
    const heads = el("div", { className: "head-strip", dataset: { testid: "heads-model-z" } });
    const show = 4;
    const rows = m.z.map((z, i) => [...z[t].slice(0, show)]);
    heads.append(
      matrixTable(rows, {
        caption: say("caption.z", { token: m.tokens[t], show: integer(show), size: integer(m.head_size) }),
        rowNames: m.z.map((_, i) => headName(i + 1)), // from 1, as the toy heads and the formula count them
        colNames: Array.from({ length: show }, (_, i) => integer(i + 1)),
      }),
    );
    const out = matrixTable([m.output[t].slice(0, 8)], {
      caption: say("caption.out", { token: m.tokens[t], n: integer(m.output[t].length) }),
      colNames: Array.from({ length: 8 }, (_, i) => integer(i + 1)),
      testid: "heads-model-out",
    });
    body.replaceChildren(scroller(out), scroller(heads)); // the result first, then each head's part of it
    // one row per head: where the chosen token's attention goes in each (a 12 × n table, not 12 n × n ones)
    grids?.update(
      [{ title: say("grid.model", { token: m.tokens[t], layer: integer(m.layer) }), weights: m.weights.map((w) => w[t]), rowNames: m.weights.map((_, i) => headName(i + 1)), colNames: m.tokens }],
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
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
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
