// Chapter `block`: one transformer block of the real model, point by point in the order the
// model computes them (POST /api/block): input → attention (× W_O) → add → LayerNorm → feed-forward
// → add → LayerNorm for BERT (post-LN); GPT-2 models normalise first (pre-LN). Each point shows
// each token's vector length and first numbers; the last step compares post-LN with a pre-LN
// what-if the server computes from the same weights.
//
// Its words are in the catalogs (static/i18n/<lang>.json, keys "chapter.block.…"), read when drawn
// (chapters/CONTRACT.md: "Words in every language"); the points' own names (input, norm1, ffn, …) are
// the model's, written in the reader's language by chapter.block.name.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { integer, t } from "../i18n.js";
import { pyStr } from "../pycode.js";
import { BlockDiagram } from "../scene/blockdiagram.js";
import { ANIMAL, matrixTable, picker, pySafetensors, quote, scroller, sentenceBox, vec } from "./widgets.js";

/** This chapter's message `key` (chapter.block.<key>) with `values`. */
const say = (key, values) => t(`chapter.block.${key}`, values);
const SHOW = 4; // first coordinates shown per vector
const ROWS = 5; // tokens shown per table: a window around the chosen one (on the first screen)

/** The names each step lights up, by the model's kind. */
const POINTS = {
  bert: { input: ["input"], attention: ["attention"], add: ["residual"], norm: ["norm1"], ffn: ["ffn"], output: ["residual2", "output"] },
  gpt2: { input: ["input"], attention: ["ln_1", "attention"], add: ["residual"], norm: ["ln_2"], ffn: ["mlp"], output: ["output"] },
};

/** A point's name as the tables and numbers write it (English: the model's own: input, norm1, ffn, …). */
const named = (name) => say("name", { name, raw: name });
/** What the 3D diagram calls each point: words a student reads, not the model's variable names. */
const readable = (name) => say("readable", { name, raw: name });

function tokenOf(a, ctx) {
  const f = Number(ctx.params.tok);
  if (ctx.params.tok !== "" && Number.isInteger(f) && f >= 0 && f < a.tokens.length) return f;
  const it = a.tokens.indexOf("it");
  return it >= 0 ? it : Math.min(1, a.tokens.length - 1);
}

function norm(a, name, tok) {
  return fixed3(a.norms[name][tok]);
}

/** A step's getters for its title and short name (read when drawn, in the page's language). */
const step = ({ id, ...rest }) => ({
  id,
  get title() {
    return say(`${id}.title`);
  },
  get short() {
    return say(`${id}.short`);
  },
  ...rest,
});

const STEPS = [
  step({
    id: "input",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      return say("input.text", {
        layer: integer(a.layer),
        model: a.model,
        from: a.layer === 0 ? a.kind : "layer",
        previous: integer(a.layer - 1),
        hidden: integer(a.hidden),
        token: a.tokens[tok],
        norm: norm(a, "input", tok),
      });
    },
  }),
  step({
    id: "attention",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      return say("attention.text", { kind: a.kind, token: a.tokens[tok], change: norm(a, "attention", tok), input: norm(a, "input", tok) });
    },
  }),
  step({
    id: "add",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      return say("add.text", { token: a.tokens[tok], input: norm(a, "input", tok), change: norm(a, "attention", tok), sum: norm(a, "residual", tok) });
    },
  }),
  step({
    id: "norm",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      const name = a.kind === "bert" ? "norm1" : "ln_2";
      return say("norm.text", { kind: a.kind, token: a.tokens[tok], before: norm(a, "residual", tok), after: norm(a, name, tok) });
    },
  }),
  step({
    id: "ffn",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      const name = a.kind === "bert" ? "ffn" : "mlp";
      return say("ffn.text", { hidden: integer(a.hidden), wide: integer(a.hidden * 4), token: a.tokens[tok], change: norm(a, name, tok) });
    },
  }),
  step({
    id: "output",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      if (a.kind === "bert") {
        return say("output.bert", {
          sum: norm(a, "residual2", tok),
          output: norm(a, "output", tok),
          token: a.tokens[tok],
          next: integer(a.layer + 1),
          last: String(a.layer + 1 >= a.layers),
        });
      }
      return say("output.gpt2", { output: norm(a, "output", tok), token: a.tokens[tok] });
    },
  }),
  step({
    id: "order",
    text: (a, ctx) => {
      const tok = tokenOf(a, ctx);
      if (!a.what_if) return say("order.gpt2");
      const w = a.what_if;
      return say("order.text", {
        model: a.model,
        token: a.tokens[tok],
        pre: fixed3(w.norms.output[tok]),
        post: norm(a, "output", tok),
        cosine: fixed3(w.output_cosine[tok]),
      });
    },
  }),
];

function numbers(a, stepId, ctx) {
  const tok = tokenOf(a, ctx);
  const out = [{ label: say("number.token"), value: quote(a.tokens[tok]), testid: "block-token" }];
  if (stepId === "order" && a.what_if) {
    out.push({ label: say("number.post"), value: norm(a, "output", tok), testid: "block-norm-output" });
    out.push({ label: say("number.pre"), value: fixed3(a.what_if.norms.output[tok]), testid: "block-whatif-norm" });
    out.push({ label: say("number.cosine"), value: fixed3(a.what_if.output_cosine[tok]), testid: "block-whatif-cos" });
    return out;
  }
  const names = stepId === "order" ? ["input", "output"] : ["input", ...POINTS[a.kind][stepId].filter((n) => n !== "input")];
  // (a step's own points only: those after it stay unknown while the class answers a question on them)
  for (const name of names) {
    out.push({ label: `‖${named(name)}‖`, value: norm(a, name, tok), testid: `block-norm-${name}` });
    out.push({ label: say("number.first", { name: named(name) }), value: vec(a.vectors[name][tok], SHOW), testid: `block-vec-${name}` });
  }
  return out;
}

/** The whole layer in NumPy, from the model's weights file: prints every point's lengths. */
function code(a, stepId, ctx) {
  if (a.kind !== "bert" || a.model !== "all-MiniLM-L6-v2") return "";
  const whatIf = stepId === "order";
  return [
    ...pySafetensors(),
    "from math import erf",
    "",
    `ids = [${a.ids.join(", ")}]  # the tokenizer's ids for ${a.tokens.length} tokens`,
    `layer = ${a.layer}`,
    "n, heads, d = len(ids), 12, 32",
    "",
    "",
    "def layer_norm(x, name, eps=1e-12):",
    "    m, v = x.mean(1, keepdims=True), x.var(1, keepdims=True)",
    '    return (x - m) / np.sqrt(v + eps) * W(name + ".weight") + W(name + ".bias")',
    "",
    "",
    "def linear(x, name):  # torch stores W as (out, in)",
    '    return x @ W(name + ".weight").T + W(name + ".bias")',
    "",
    "",
    "def attention(x, p):  # 12 heads, concatenated, × W_O",
    '    q, k, v = (linear(x, p + "attention.self." + s) for s in ("query", "key", "value"))',
    "    z = np.zeros_like(v)",
    "    for h in range(heads):",
    "        c = slice(h * d, (h + 1) * d)",
    "        s = q[:, c] @ k[:, c].T / np.sqrt(d)",
    "        e = np.exp(s - s.max(1, keepdims=True))",
    "        z[:, c] = e / e.sum(1, keepdims=True) @ v[:, c]",
    '    return linear(z, p + "attention.output.dense")',
    "",
    "",
    "def ffn(x, p):  # two linear layers with the exact (erf) GELU between",
    '    h = linear(x, p + "intermediate.dense")',
    "    h = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))",
    '    return linear(h, p + "output.dense")',
    "",
    "",
    "# embeddings: word + position + segment 0, then LayerNorm",
    'x = W("embeddings.word_embeddings.weight")[ids] + W("embeddings.position_embeddings.weight")[:n]',
    'x = layer_norm(x + W("embeddings.token_type_embeddings.weight")[0], "embeddings.LayerNorm")',
    "for i in range(layer + 1):",
    '    p = f"encoder.layer.{i}."',
    "    points = {\"input\": x}",
    '    points["attention"] = attention(x, p)',
    '    points["residual"] = x + points["attention"]',
    '    points["norm1"] = layer_norm(points["residual"], p + "attention.output.LayerNorm")  # post-LN: after the add',
    '    points["ffn"] = ffn(points["norm1"], p)',
    '    points["residual2"] = points["norm1"] + points["ffn"]',
    '    points["output"] = layer_norm(points["residual2"], p + "output.LayerNorm")',
    '    if i < layer:',
    '        x = points["output"]',
    "",
    ...(whatIf
      ? [
          "# what-if: the same weights wired pre-LN, x + Sublayer(LN(x)) (not what the model computes)",
          'r = x + attention(layer_norm(x, p + "attention.output.LayerNorm"), p)',
          'pre_ln = r + ffn(layer_norm(r, p + "output.LayerNorm"), p)',
          'lengths = {"post_ln": np.linalg.norm(points["output"], axis=1).round(6).tolist(),',
          '           "pre_ln": np.linalg.norm(pre_ln, axis=1).round(6).tolist()}',
        ]
      : ['lengths = {name: np.linalg.norm(v, axis=1).round(6).tolist() for name, v in points.items()}']),
    `print(json.dumps({"step": ${pyStr(stepId)}, "layer": layer, "lengths": lengths}))`,
  ].join("\n");
}

function mount(ctx) {
  const controls = el("div", { className: "chapter-controls" });
  const flow = el("ol", { className: "block-flow", "aria-label": say("flow"), dataset: { testid: "block-flow" } });
  const body = el("div", { className: "block-body", dataset: { testid: "block-body" } });
  ctx.panel.append(flow, body, controls); // what the step's text speaks of first, the controls after
  const diagram = ctx.stage ? new BlockDiagram(ctx.stage) : null;

  function labels(a, order, norms, tok) {
    return Object.fromEntries(order.map((name) => [name, `${readable(name)}\n‖x‖ ${fixed3(norms[name][tok])}`]));
  }

  function hideAfter(labelsOf, upto, order) {
    for (const name of order.slice(upto + 1)) labelsOf[name] = `${readable(name)}\n‖x‖ ?`;
    return labelsOf;
  }

  return {
    update(a, stepId) {
      const tok = tokenOf(a, ctx);
      const current = stepId === "order" ? ["input", "output"] : POINTS[a.kind][stepId];
      // while the class answers a question, the points after this step keep their lengths to themselves
      const upto = ctx.withheld ? Math.max(...current.map((n) => a.order.indexOf(n))) : a.order.length - 1;
      const known = (name) => a.order.indexOf(name) <= upto;
      controls.replaceChildren(
        sentenceBox(ctx.params.sentence, (s) => ctx.setParams({ sentence: s, tok: "" }), "block-sentence"),
        picker(say("pick.layer"), Array.from({ length: a.layers }, (_, l) => [l, integer(l)]), a.layer, (v) => ctx.setParams({ layer: v }), "block-layer"),
        picker(say("pick.token"), a.tokens.map((w, i) => [i, `${integer(i)}: ${w}`]), tok, (v) => ctx.setParams({ tok: v }), "block-tokenpick"),
      );
      flow.replaceChildren(
        ...a.order.map((name) => {
          const li = el("li", { className: current.includes(name) ? "current" : "" }, known(name) ? `${named(name)} ${fixed3(a.norms[name][tok])}` : `${named(name)} ?`);
          li.dataset.testid = `block-point-${name}`;
          return li;
        }),
      );
      // the points of this step: every token's length and first numbers
      const shown = stepId === "order" ? ["output"] : current;
      // the rows around the chosen token (a long sentence would push it off the first screen)
      const n = a.tokens.length;
      const from = n > ROWS ? Math.min(n - ROWS, Math.max(0, tok - Math.floor(ROWS / 2))) : 0;
      const ids = Array.from({ length: Math.min(n, ROWS) }, (_, i) => from + i);
      const tables = shown.map((name) =>
        scroller(
          matrixTable(
            ids.map((i) => [a.norms[name][i], ...a.vectors[name][i].slice(0, SHOW)]),
            {
              caption: say("caption", {
                name: named(name),
                show: integer(SHOW),
                hidden: integer(a.hidden),
                window: String(n > ROWS),
                from: integer(from + 1),
                to: integer(from + ids.length),
                n: integer(n),
              }),
              rowNames: ids.map((i) => a.tokens[i]),
              rowIds: ids,
              colNames: ["‖x‖", ...Array.from({ length: SHOW }, (_, i) => String(i + 1))],
              testid: `block-table-${name}`,
              hotRow: tok - from,
            },
          ),
        ),
      );
      const parts = [...tables];
      if (stepId === "order" && a.what_if) {
        const w = a.what_if;
        parts.push(
          el("p", { className: "what-if-note" }, say("whatIf.note")),
          scroller(
            matrixTable(
              a.tokens.map((_, i) => [...w.order.map((n) => w.norms[n][i]), w.output_cosine[i]]),
              { caption: say("whatIf.caption"), rowNames: a.tokens, colNames: [...w.order.map(named), "cos"], testid: "block-whatif-table" },
            ),
          ),
        );
      }
      body.replaceChildren(...parts);
      const names = (order) => Object.fromEntries(order.map((name) => [name, named(name)])); // a narrow view's labels
      const columns = [{ title: say("column.model", { kind: a.kind }), order: a.order, names: names(a.order), labels: hideAfter(labels(a, a.order, a.norms, tok), upto, a.order) }];
      if (stepId === "order" && a.what_if) {
        const order = a.what_if.order;
        columns.push({ title: say("column.whatIf"), order, names: names(order), labels: labels(a, order, a.what_if.norms, tok) });
      }
      diagram?.update(columns, current);
    },
    dispose() {
      diagram?.dispose();
      controls.remove();
      flow.remove();
      body.remove();
    },
  };
}

export default {
  id: "block",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { sentence: ANIMAL, layer: "3", tok: "" },
  figure: "#chapter-stage, [data-testid=block-flow], #chapter-panel .block-body > :first-child table", // the step's points and its table
  steps: STEPS,
  async load(ctx) {
    return ctx.post("/api/block", { sentence: ctx.params.sentence, layer: Number(ctx.params.layer) || 0 });
  },
  mount,
  numbers,
  code,
};
