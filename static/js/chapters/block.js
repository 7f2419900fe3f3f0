// Chapter `block`: one transformer block of the real model, point by point in the order the
// model computes them (POST /api/block): input → attention (× W_O) → add → LayerNorm → feed-forward
// → add → LayerNorm for BERT (post-LN); GPT-2 models normalise first (pre-LN). Each point shows
// each token's vector length and first numbers; the last step compares post-LN with a pre-LN
// what-if the server computes from the same weights.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { pyStr } from "../pycode.js";
import { BlockDiagram } from "../scene/blockdiagram.js";
import { ANIMAL, matrixTable, picker, pySafetensors, scroller, sentenceBox, vec } from "./widgets.js";

const quote = (w) => `“${w}”`;
const SHOW = 4; // first coordinates shown per vector
const ROWS = 5; // tokens shown per table: a window around the chosen one (on the first screen)

/** The names each step lights up, by the model's kind. */
const POINTS = {
  bert: { input: ["input"], attention: ["attention"], add: ["residual"], norm: ["norm1"], ffn: ["ffn"], output: ["residual2", "output"] },
  gpt2: { input: ["input"], attention: ["ln_1", "attention"], add: ["residual"], norm: ["ln_2"], ffn: ["mlp"], output: ["output"] },
};

/** What the 3D diagram calls each point: words a student reads, not the model's variable names. */
const READABLE = {
  input: "input",
  ln_1: "LayerNorm",
  attention: "attention · W_O",
  residual: "input + attention",
  norm1: "LayerNorm",
  ln_2: "LayerNorm",
  ffn: "feed-forward",
  mlp: "feed-forward",
  residual2: "+ feed-forward",
  output: "output",
};

function tokenOf(a, ctx) {
  const f = Number(ctx.params.tok);
  if (ctx.params.tok !== "" && Number.isInteger(f) && f >= 0 && f < a.tokens.length) return f;
  const it = a.tokens.indexOf("it");
  return it >= 0 ? it : Math.min(1, a.tokens.length - 1);
}

function norm(a, name, t) {
  return fixed3(a.norms[name][t]);
}

const STEPS = [
  {
    id: "input",
    title: "The layer's input",
    short: "input",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      const from = a.layer === 0 ? "the embeddings (word + position" + (a.kind === "bert" ? " + segment, then LayerNorm)" : ")") : `the output of layer ${a.layer - 1}`;
      return (
        `Layer ${a.layer} of ${a.model} starts from ${from}: one vector of ${a.hidden} numbers per token. ` +
        `${quote(a.tokens[t])} comes in with length ‖x‖ = ${norm(a, "input", t)} (the length of its arrow: √ of the sum of its ` +
        `${a.hidden} squared numbers). The diagram lists every point the layer computes, in its own order, with each one's length.`
      );
    },
  },
  {
    id: "attention",
    title: "Multi-head attention, then W_O",
    short: "attention",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      const pre = a.kind === "gpt2" ? "GPT-2 first normalises its input (ln_1), then every head" : "Every head";
      return (
        `${pre} attends as in the chapter on heads; their outputs are concatenated and multiplied by W_O. ` +
        `What comes out is not the new vector yet: it is a change to add. For ${quote(a.tokens[t])} that change has length ` +
        `${norm(a, "attention", t)} (its ‖·‖, as for every point), next to ${norm(a, "input", t)} for the input.`
      );
    },
  },
  {
    id: "add",
    title: "Residual: add the input back",
    short: "add",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      return (
        "The residual connection adds the attention's change to the unchanged input: x + Attention(x). The word keeps what it " +
        `was and gains what it gathered. ${quote(a.tokens[t])}: length ${norm(a, "input", t)} + a change of ${norm(a, "attention", t)} ` +
        `→ ${norm(a, "residual", t)} (lengths do not simply add: the two vectors point in different directions).`
      );
    },
  },
  {
    id: "norm",
    title: "LayerNorm",
    short: "norm",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      const name = a.kind === "bert" ? "norm1" : "ln_2";
      return (
        "LayerNorm shifts each token's numbers to mean 0 and scales them to variance 1, then applies a learned scale and shift per " +
        `coordinate. It keeps the numbers in a steady range from layer to layer. ${quote(a.tokens[t])}: ${norm(a, "residual", t)} → ` +
        `${norm(a, name, t)}.` +
        (a.kind === "bert" ? " Here it comes after the add: BERT normalises the sum (post-LN)." : " GPT-2 normalises a copy that feeds the MLP; the stream itself stays un-normalised (pre-LN).")
      );
    },
  },
  {
    id: "ffn",
    title: "Feed-forward network (GELU)",
    short: "feed-forward",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      const name = a.kind === "bert" ? "ffn" : "mlp";
      return (
        `Each token alone goes through two linear layers with a GELU between them (${a.hidden} → ${a.hidden * 4} → ${a.hidden} numbers). ` +
        "No token looks at another here: attention moved information between tokens, the feed-forward network works on each one. " +
        `The change it proposes for ${quote(a.tokens[t])} has length ${norm(a, name, t)}.`
      );
    },
  },
  {
    id: "output",
    title: "Add again, and the layer's output",
    short: "output",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      if (a.kind === "bert") {
        return (
          `A second residual adds the feed-forward change to its input (${norm(a, "residual2", t)}), and a second LayerNorm gives the ` +
          `layer's output: ${norm(a, "output", t)} for ${quote(a.tokens[t])}. This is exactly the input of layer ${a.layer + 1}` +
          `${a.layer + 1 >= a.layers ? " (or, after the last layer, the model's output)" : ""}.`
        );
      }
      return `The MLP's change is added to the stream: the layer's output, ${norm(a, "output", t)} for ${quote(a.tokens[t])}, is the next layer's input.`;
    },
  },
  {
    id: "order",
    title: "Post-LN here, pre-LN in most newer models",
    short: "post vs pre",
    text: (a, ctx) => {
      const t = tokenOf(a, ctx);
      if (!a.what_if) {
        return "This GPT-2 model normalises before each sublayer (pre-LN), as most newer models do: x + Attention(LN(x)), then x + MLP(LN(x)). The stream itself is never normalised inside the block.";
      }
      const w = a.what_if;
      return (
        `${a.model} is a BERT model: it normalises after each add (post-LN), LN(x + Sublayer(x)), as the 2017 paper did. ` +
        "GPT-2 and most newer models (LLaMA and its kind, which use RMSNorm) normalise before each sublayer instead (pre-LN): x + Sublayer(LN(x)). " +
        "On the right, a what-if: the same layer's weights wired pre-LN. The model was never trained that way, so these are not its numbers: " +
        `they only show what the order changes. The output of ${quote(a.tokens[t])} has length ${fixed3(w.norms.output[t])} instead of ` +
        `${norm(a, "output", t)} (pre-LN never normalises the stream itself, so its length can grow layer after layer), and points in a ` +
        `different direction (cosine ${fixed3(w.output_cosine[t])}).`
      );
    },
  },
];

function numbers(a, stepId, ctx) {
  const t = tokenOf(a, ctx);
  const out = [{ label: "token", value: quote(a.tokens[t]), testid: "block-token" }];
  if (stepId === "order" && a.what_if) {
    out.push({ label: "‖output‖, post-LN (the model)", value: norm(a, "output", t), testid: "block-norm-output" });
    out.push({ label: "‖output‖, pre-LN what-if", value: fixed3(a.what_if.norms.output[t]), testid: "block-whatif-norm" });
    out.push({ label: "cosine between them", value: fixed3(a.what_if.output_cosine[t]), testid: "block-whatif-cos" });
    return out;
  }
  const names = stepId === "order" ? ["input", "output"] : ["input", ...POINTS[a.kind][stepId].filter((n) => n !== "input")];
  // (a step's own points only: those after it stay unknown while the class answers a question on them)
  for (const name of names) {
    out.push({ label: `‖${name}‖`, value: norm(a, name, t), testid: `block-norm-${name}` });
    out.push({ label: `${name}, first numbers`, value: vec(a.vectors[name][t], SHOW), testid: `block-vec-${name}` });
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
  const flow = el("ol", { className: "block-flow", "aria-label": "The points of this layer, in order", dataset: { testid: "block-flow" } });
  const body = el("div", { className: "block-body", dataset: { testid: "block-body" } });
  ctx.panel.append(flow, body, controls); // what the step's text speaks of first, the controls after
  const diagram = ctx.stage ? new BlockDiagram(ctx.stage) : null;

  function labels(a, order, norms, t) {
    return Object.fromEntries(order.map((name) => [name, `${READABLE[name] ?? name}\n‖x‖ ${fixed3(norms[name][t])}`]));
  }

  function hideAfter(labelsOf, upto, order) {
    for (const name of order.slice(upto + 1)) labelsOf[name] = `${READABLE[name] ?? name}\n‖x‖ ?`;
    return labelsOf;
  }

  return {
    update(a, stepId) {
      const t = tokenOf(a, ctx);
      const current = stepId === "order" ? ["input", "output"] : POINTS[a.kind][stepId];
      // while the class answers a question, the points after this step keep their lengths to themselves
      const upto = ctx.withheld ? Math.max(...current.map((n) => a.order.indexOf(n))) : a.order.length - 1;
      const known = (name) => a.order.indexOf(name) <= upto;
      controls.replaceChildren(
        sentenceBox(ctx.params.sentence, (s) => ctx.setParams({ sentence: s, tok: "" }), "block-sentence"),
        picker("layer", Array.from({ length: a.layers }, (_, l) => [l, String(l)]), a.layer, (v) => ctx.setParams({ layer: v }), "block-layer"),
        picker("token", a.tokens.map((w, i) => [i, `${i}: ${w}`]), t, (v) => ctx.setParams({ tok: v }), "block-tokenpick"),
      );
      flow.replaceChildren(
        ...a.order.map((name) => {
          const li = el("li", { className: current.includes(name) ? "current" : "" }, known(name) ? `${name} ${fixed3(a.norms[name][t])}` : `${name} ?`);
          li.dataset.testid = `block-point-${name}`;
          return li;
        }),
      );
      // the points of this step: every token's length and first numbers
      const shown = stepId === "order" ? ["output"] : current;
      // the rows around the chosen token (a long sentence would push it off the first screen)
      const n = a.tokens.length;
      const from = n > ROWS ? Math.min(n - ROWS, Math.max(0, t - Math.floor(ROWS / 2))) : 0;
      const ids = Array.from({ length: Math.min(n, ROWS) }, (_, i) => from + i);
      const part = n > ROWS ? `, tokens ${from + 1}–${from + ids.length} of ${n}` : "";
      const tables = shown.map((name) =>
        scroller(
          matrixTable(
            ids.map((i) => [a.norms[name][i], ...a.vectors[name][i].slice(0, SHOW)]),
            {
              caption: `${name}: length ‖x‖ and first ${SHOW} of ${a.hidden} numbers${part}`,
              rowNames: ids.map((i) => a.tokens[i]),
              rowIds: ids,
              colNames: ["‖x‖", ...Array.from({ length: SHOW }, (_, i) => String(i + 1))],
              testid: `block-table-${name}`,
              hotRow: t - from,
            },
          ),
        ),
      );
      const parts = [...tables];
      if (stepId === "order" && a.what_if) {
        const w = a.what_if;
        parts.push(
          el("p", { className: "what-if-note" }, "What-if, clearly not the model: this layer's own weights in the pre-LN order. Lengths per point:"),
          scroller(
            matrixTable(
              a.tokens.map((_, i) => [...w.order.map((n) => w.norms[n][i]), w.output_cosine[i]]),
              { caption: "pre-LN what-if: ‖x‖ at each point, and the cosine of its output with the model's", rowNames: a.tokens, colNames: [...w.order, "cos"], testid: "block-whatif-table" },
            ),
          ),
        );
      }
      body.replaceChildren(...parts);
      const columns = [{ title: `${a.kind === "bert" ? "post-LN: the model" : "pre-LN: the model"}`, order: a.order, labels: hideAfter(labels(a, a.order, a.norms, t), upto, a.order) }];
      if (stepId === "order" && a.what_if) columns.push({ title: "pre-LN: what-if", order: a.what_if.order, labels: labels(a, a.what_if.order, a.what_if.norms, t) });
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
  title: "The transformer block",
  summary: "One layer of the real model, point by point: attention, add, LayerNorm, feed-forward, add, LayerNorm.",
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
