// Chapter `rnn`: why the transformer dropped recurrence. A small recurrent network with fixed,
// seeded weights reads the words one after another; the server gives its hidden states, how much
// the first word still counts in each (‖∂h_t/∂x_1‖₂, the exact Jacobian by the chain rule) and,
// on the same words, the attention weight the last word puts on the first. POST /api/rnn.
//
// Its words are in the catalogs (static/i18n/<lang>.json, keys "chapter.rnn.…"), read when drawn
// (chapters/CONTRACT.md: "Words in every language"). The worked example's words are shown in the
// page's language where it carries them word for word (widgets.js exampleWords); the server always
// gets the words as the models read them, so the numbers are the same in every language.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { decimal, integer, language, listOf, locale, t } from "../i18n.js";
import { pyMatrix, pyStrings } from "../pycode.js";
import { RnnChain } from "../scene/chain.js";
import { EXAMPLE, exampleNote, exampleWords, scrollBox, sentWords, unbroken } from "./widgets.js";

const DEFAULT_WORDS = "the cat ate its fish";
const LONG = "the animal did not cross the street because it was too tired";

/** This chapter's message `key` (chapter.rnn.<key>) with `values`. */
const say = (key, values) => t(`chapter.rnn.${key}`, values);
const english = () => language() === "en";

/** 4 decimals, or 3 significant digits in e-notation when smaller than 0.001 (in the language's digits). */
export function sig(x) {
  if (x !== 0 && Math.abs(x) < 0.001) {
    if (english()) return x.toExponential(2).replace("-", "\u2212");
    const [mantissa, exponent] = x.toExponential(2).split("e");
    return `${decimal(Number(mantissa), 2)}e${decimal(Number(exponent), 0)}`;
  }
  return english() ? x.toFixed(4) : decimal(x, 4);
}

/** Three significant digits ("12.3", "1.50e+3" as JavaScript writes them in English). */
function precise3(x) {
  if (english()) return x.toPrecision(3);
  return new Intl.NumberFormat(locale(), { minimumSignificantDigits: 3, maximumSignificantDigits: 3, useGrouping: false }).format(x);
}

function wordsOf(params) {
  return String(params.words ?? DEFAULT_WORDS).split(/\s+/).filter(Boolean);
}

function ratio(a) {
  const r = a.influence[0] / a.influence[a.influence.length - 1];
  return r >= 1 ? say("fade.smaller", { r: precise3(r) }) : say("fade.larger", { r: precise3(1 / r) });
}


/** h's numbers as a list: "[0.123, −0.456]" ("[0,123; −0,456]" where the decimal sign is a comma). */
const vector = (row) => `[${listOf(row.map(fixed3))}]`;

const STEPS = [
  {
    id: "chain",
    get title() {
      return say("chain.title");
    },
    get short() {
      return say("chain.short");
    },
    text: (a) => {
      const n = a.words.length;
      const words = exampleWords(EXAMPLE, a.words);
      const note = exampleNote(EXAMPLE, a.words);
      return (
        say("chain.text", {
          formula: unbroken("h_t = tanh(W_h·h_{t−1} + W_x·x_t)"),
          chain: unbroken(`h_0 → h_1 → … → h_${integer(n)}`),
          hn: `h_${integer(n)}`,
          dh: integer(a.d_h),
          n: integer(n),
          prev: integer(n - 1),
          last: words[n - 1],
          h: vector(a.h[n - 1]),
          steps: integer(a.rnn_steps),
        }) + (note ? ` ${note}` : "")
      );
    },
  },
  {
    id: "fade",
    get title() {
      return say("fade.title");
    },
    get short() {
      return say("fade.short");
    },
    text: (a, ctx) => {
      if (ctx?.withheld) return t("lesson.hidden");
      const n = a.words.length;
      return say("fade.text", {
        first: exampleWords(EXAMPLE, a.words)[0],
        dh: integer(a.d_h),
        dx: integer(a.d_x),
        atFirst: sig(a.influence[0]),
        atLast: sig(a.influence[n - 1]),
        hn: `h_${integer(n)}`,
        ratio: ratio(a),
        more: n - 1,
      });
    },
  },
  {
    id: "direct",
    get title() {
      return say("direct.title");
    },
    get short() {
      return say("direct.short");
    },
    text: (a) => {
      const n = a.words.length;
      const words = exampleWords(EXAMPLE, a.words);
      return say("direct.text", {
        n: integer(n),
        last: words[n - 1],
        first: words[0],
        prev: integer(n - 1),
        w: fixed3(a.last_to_first),
        rnnSteps: integer(a.rnn_steps),
        attentionSteps: integer(a.attention_steps),
      });
    },
  },
];

/** The table; while the class answers (`hide`) without the first word's influence (the question's answer). */
function table(a, stepId, hide = false) {
  const n = a.words.length;
  const words = exampleWords(EXAMPLE, a.words);
  const t = el("table", { className: "ca-table", dataset: { testid: "rnn-table" } });
  t.append(el("caption", {}, stepId === "direct" ? say("table.attention", { last: words[n - 1] }) : say("table.states", { first: words[0] })));
  const head = el("tr");
  const word = say("column.word");
  const cols = stepId === "direct" ? [word, say("column.weight"), ""] : hide ? ["t", word, "h_t"] : ["t", word, "h_t", "‖∂h_t/∂x₁‖₂", ""];
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
      tr.append(el("td", {}, words[i]), el("td", { dataset: { testid: `rnn-weight-${i}` } }, fixed3(w)));
    } else {
      bar.style.width = `${(100 * a.influence[i]) / top}%`;
      tr.append(el("td", {}, integer(i + 1)), el("td", {}, words[i]), el("td", { className: "ca-vec" }, vector(a.h[i])));
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
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { words: DEFAULT_WORDS },
  figure: "#chapter-stage, [data-testid=rnn-table]", // what every step's text reads: the view and the table
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/rnn", { words: wordsOf(ctx.params) });
  },

  mount(ctx) {
    const form = el("form", { className: "ca-form", dataset: { testid: "rnn-form" } });
    const input = el("input", { type: "text", maxlength: "1600", dir: "auto", "aria-label": say("form.words"), dataset: { testid: "rnn-words" } });
    input.value = exampleWords(EXAMPLE, wordsOf(ctx.params)).join(" ");
    const long = el("button", { type: "button", dataset: { testid: "rnn-long" } }, say("form.long"));
    long.addEventListener("click", () => ctx.setParams({ words: LONG }));
    form.append(el("label", { className: "ca-label" }, say("form.label")), input, el("button", { type: "submit", dataset: { testid: "rnn-run" } }, t("widget.run")), long);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const words = sentWords(input.value).join(" "); // the example's words in the page's language go as the models read them
      if (words) ctx.setParams({ words });
    });
    const note = el("p", { className: "ca-note" }, say("form.note"));
    const out = el("div", { className: "ca-out" });
    ctx.panel.append(out, form, note);
    const chain = ctx.stage ? new RnnChain(ctx.stage) : null;
    return {
      update(answer, stepId) {
        const words = exampleWords(EXAMPLE, answer.words);
        input.value = words.join(" ");
        const hide = Boolean(ctx.withheld);
        out.replaceChildren(table(answer, stepId, hide));
        chain?.update({ ...answer, words }, { influence: stepId === "fade" && !hide, links: stepId === "direct" && !hide });
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
      { label: say("number.rnnSteps"), value: integer(a.rnn_steps), testid: "rnn-steps" },
      { label: say("number.attentionSteps"), value: integer(a.attention_steps), testid: "attention-steps" },
    ];
    if (ctx?.withheld) return steps; // the influence is the class's question
    return [
      ...steps,
      { label: "‖∂h_1/∂x_1‖₂", value: sig(a.influence[0]), testid: "rnn-influence-first" },
      { label: `‖∂h_${n}/∂x_1‖₂`, value: sig(a.influence[n - 1]), testid: "rnn-influence-last" },
      { label: say("number.lastToFirst"), value: sig(a.last_to_first), testid: "rnn-last-to-first" },
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
