// Chapter `rnn`: why the transformer dropped recurrence. A small recurrent network with fixed,
// seeded weights reads the words one after another; the server gives its hidden states, how much
// the first word still counts in each (‖∂h_t/∂x_1‖₂, the exact Jacobian by the chain rule) and,
// on the same words, the attention weight the last word puts on the first. POST /api/rnn.
//
// Note for lesson.js's owner: the numbers list gives each label class "label", which app.css also
// styles for the 3D view's labels (nowrap, max-width 9em, ellipsis), so a long label is cut short
// and a long value runs past a phone's edge. These chapters keep their labels short meanwhile; a
// class of its own (e.g. "number-label") would let any chapter name its numbers in full.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { pyMatrix, pyStrings } from "../pycode.js";
import { RnnChain } from "../scene/chain.js";
import { scrollBox } from "./widgets.js";

const DEFAULT_WORDS = "the cat ate its fish";
const LONG = "the animal did not cross the street because it was too tired";
const quote = (w) => `“${w}”`;

/** 4 decimals, or 3 significant digits in e-notation when smaller than 0.001. */
export function sig(x) {
  if (x !== 0 && Math.abs(x) < 0.001) return x.toExponential(2).replace("-", "\u2212");
  return x.toFixed(4);
}

function wordsOf(params) {
  return String(params.words ?? DEFAULT_WORDS).split(/\s+/).filter(Boolean);
}

function ratio(a) {
  const r = a.influence[0] / a.influence[a.influence.length - 1];
  return r >= 1 ? `${r.toPrecision(3)} times smaller` : `${(1 / r).toPrecision(3)} times larger (these words keep it alive)`;
}

const STEPS = [
  {
    id: "chain",
    title: "One word at a time",
    short: "chain",
    text: (a) => {
      const n = a.words.length;
      const h = a.h[n - 1].map(fixed3).join(", ");
      return (
        `A recurrent network keeps one memory vector, the hidden state h, and updates it word by word: ` +
        `h_t = tanh(W_h·h_{t−1} + W_x·x_t). Here h has ${a.d_h} numbers, always between −1 and 1 (tanh keeps them there). ` +
        `The 3D view draws the chain h_0 → h_1 → … → h_${n}, one arrow per word, with h's numbers as small bars over each ` +
        `state. To reach h_${n} ` +
        `(for ${quote(a.words[n - 1])}: [${h}]) the network has to take all ${a.rnn_steps} steps in order, because each ` +
        `needs the one before it. A GPU cannot share that work out: word ${n} waits for word ${n - 1}.`
      );
    },
  },
  {
    id: "fade",
    title: "The first word fades",
    short: "fade",
    text: (a, ctx) => {
      if (ctx?.withheld) return HIDDEN;
      const n = a.words.length;
      return (
        `How much does ${quote(a.words[0])} still count in h_t? Nudge the first word's x a tiny bit and ask how far h_t ` +
        `can move. The server works that out exactly: ∂h_t/∂x_1 is a ` +
        `${a.d_h} × ${a.d_x} matrix, built by the chain rule through every tanh on the way, and its spectral norm ` +
        `(largest singular value) is the most a small change of the first word can move h_t. It is ` +
        `${sig(a.influence[0])} at h_1 and ${sig(a.influence[n - 1])} at h_${n}: ${ratio(a)} ` +
        `after ${n - 1} more words. Each step multiplies by W_h and by tanh′ ≤ 1, so early words fade ` +
        `(and during training their gradients vanish the same way). The spheres are sized by this number.`
      );
    },
  },
  {
    id: "direct",
    title: "Attention: every word at once",
    short: "attention",
    text: (a) => {
      const n = a.words.length;
      return (
        `Attention on the same ${n} words (q = x·W_Q, k = x·W_K, with fixed random W_Q and W_K) needs no chain: ` +
        `${quote(a.words[n - 1])} compares its query with every key in one matrix product, so the first word is ` +
        `one link away, not ${n - 1}. It gives ${quote(a.words[0])} a weight of ${fixed3(a.last_to_first)}. ` +
        `That weight is a different kind of number from the fading one of the step before, so do not compare the two ` +
        `values; compare how they behave: the RNN's grows smaller with every word in between, the attention weight does ` +
        `not depend on the distance at all, only on what the two words' q and k say. ` +
        `Steps that must run one after another: ${a.rnn_steps} for the RNN, ${a.attention_steps} for attention.`
      );
    },
  },
];

const HIDDEN = "The numbers that answer the class's question are hidden for now: think first.";

/** The table; while the class answers (`hide`) without the first word's influence (the question's answer). */
function table(a, stepId, hide = false) {
  const n = a.words.length;
  const t = el("table", { className: "ca-table", dataset: { testid: "rnn-table" } });
  t.append(el("caption", {}, stepId === "direct" ? `Attention of ${quote(a.words[n - 1])} on every word` : `Hidden states, and how much ${quote(a.words[0])} counts in each`));
  const head = el("tr");
  const cols = stepId === "direct" ? ["word", "weight", ""] : hide ? ["t", "word", "h_t"] : ["t", "word", "h_t", "‖∂h_t/∂x₁‖₂", ""];
  for (const c of cols) head.append(el("th", { scope: "col" }, c));
  const thead = el("thead");
  thead.append(head);
  t.append(thead);
  const body = el("tbody");
  const top = Math.max(...a.influence);
  const wtop = Math.max(...a.weights[n - 1]);
  for (let i = 0; i < n; i++) {
    const tr = el("tr");
    const bar = el("span", { className: "ca-bar" });
    if (stepId === "direct") {
      const w = a.weights[n - 1][i];
      bar.style.width = `${(100 * w) / wtop}%`;
      tr.append(el("td", {}, a.words[i]), el("td", { dataset: { testid: `rnn-weight-${i}` } }, fixed3(w)));
    } else {
      bar.style.width = `${(100 * a.influence[i]) / top}%`;
      tr.append(el("td", {}, String(i + 1)), el("td", {}, a.words[i]), el("td", { className: "ca-vec" }, `[${a.h[i].map(fixed3).join(", ")}]`));
      if (hide) {
        body.append(tr);
        continue;
      }
      tr.append(el("td", { dataset: { testid: `rnn-influence-${i}` } }, sig(a.influence[i])));
    }
    const cell = el("td", { className: "ca-bar-cell", "aria-hidden": "true" });
    cell.append(bar);
    tr.append(cell);
    body.append(tr);
  }
  t.append(body);
  return scrollBox(t);
}

export default {
  id: "rnn",
  title: "Why not an RNN",
  summary: "A recurrent network reads one word at a time and the first word fades; attention links every word in one step.",
  params: { words: DEFAULT_WORDS },
  figure: "#chapter-stage, [data-testid=rnn-table]", // what every step's text reads: the view and the table
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/rnn", { words: wordsOf(ctx.params) });
  },

  mount(ctx) {
    const form = el("form", { className: "ca-form", dataset: { testid: "rnn-form" } });
    const input = el("input", { type: "text", maxlength: "1600", "aria-label": "Words for the RNN, separated by spaces", dataset: { testid: "rnn-words" } });
    input.value = wordsOf(ctx.params).join(" ");
    const long = el("button", { type: "button", dataset: { testid: "rnn-long" } }, "Try 12 words");
    long.addEventListener("click", () => ctx.setParams({ words: LONG }));
    form.append(el("label", { className: "ca-label" }, "Words"), input, el("button", { type: "submit", dataset: { testid: "rnn-run" } }, "Run"), long);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const words = input.value.split(/\s+/).filter(Boolean).join(" ");
      if (words) ctx.setParams({ words });
    });
    const note = el("p", { className: "ca-note" }, "2 to 64 words. The same word always gets the same x; the weights are fixed.");
    const out = el("div", { className: "ca-out" });
    ctx.panel.append(out, form, note);
    const chain = ctx.stage ? new RnnChain(ctx.stage) : null;
    return {
      update(answer, stepId) {
        input.value = answer.words.join(" ");
        const hide = Boolean(ctx.withheld);
        out.replaceChildren(table(answer, stepId, hide));
        chain?.update(answer, { influence: stepId === "fade" && !hide, links: stepId === "direct" && !hide });
      },
      dispose() {
        chain?.dispose();
      },
    };
  },

  numbers: (a, stepId, ctx) => {
    const n = a.words.length;
    const steps = [
      // short labels: each item stays on one line on a phone
      { label: "steps, RNN", value: String(a.rnn_steps), testid: "rnn-steps" },
      { label: "steps, attention", value: String(a.attention_steps), testid: "attention-steps" },
    ];
    if (ctx?.withheld) return steps; // the influence is the class's question
    return [
      ...steps,
      { label: "‖∂h_1/∂x_1‖₂", value: sig(a.influence[0]), testid: "rnn-influence-first" },
      { label: `‖∂h_${n}/∂x_1‖₂`, value: sig(a.influence[n - 1]), testid: "rnn-influence-last" },
      { label: "weight last → first", value: sig(a.last_to_first), testid: "rnn-last-to-first" },
    ];
  },

  code: (a) =>
    [
      "import json",
      "import numpy as np",
      "",
      `words = ${pyStrings(a.words)}`,
      "# each word's x, and the network's fixed weights: the server's numbers",
      `x = ${pyMatrix(a.x)}`,
      `W_h = ${pyMatrix(a.w_h)}`,
      `W_x = ${pyMatrix(a.w_x)}`,
      "",
      "h = np.zeros(W_h.shape[0])  # h_0",
      "states, influence = [], []",
      "for t in range(len(words)):  # one word after another: the loop cannot be skipped",
      "    h = np.tanh(W_h @ h + W_x @ x[t])",
      "    D = np.diag(1 - h**2)  # tanh' at this step",
      "    J = D @ W_x if t == 0 else D @ W_h @ J  # dh_t/dx_1 by the chain rule",
      "    states.append(h.tolist())",
      "    influence.append(float(np.linalg.norm(J, 2)))  # spectral norm: largest singular value",
      "",
      "# attention on the same x: one matrix product, no loop over the words",
      `W_Q = ${pyMatrix(a.w_q)}`,
      `W_K = ${pyMatrix(a.w_k)}`,
      "scores = (x @ W_Q) @ (x @ W_K).T / np.sqrt(x.shape[1])",
      "weights = np.exp(scores - scores.max(axis=1, keepdims=True))",
      "weights /= weights.sum(axis=1, keepdims=True)",
      "",
      'print(json.dumps({"h": states, "influence": influence, "last_to_first": float(weights[-1, 0])}))',
    ].join("\n"),
};
