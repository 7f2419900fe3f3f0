// Chapter `masks`: full attention (BERT) against the causal mask (GPT), on the attention view
// (static/js/attention/), with the side-by-side difference of the two weight tables. Each step
// sets the view's step and mask (`view`); M still switches the mask by hand. Functions get the
// same `answer` and attentionCtx(ctx) as chapters/steps.js.

import { fixed3 } from "../format.js";
import { attentionChapter, attentionCtx, preamble, stageLines } from "./steps.js";

const quote = (w) => `“${w}”`;

function visibleKeys(answer, row) {
  return answer.masked[row].filter((x) => x !== null).length;
}

function sharesText(answer, row) {
  return answer.weights[row]
    .map((w, j) => ({ w, j }))
    .filter(({ j }) => answer.masked[row][j] !== null)
    .map(({ w, j }) => `${quote(answer.tokens[j])} ${fixed3(w)}`)
    .join(", ");
}

const STEPS = [
  {
    id: "full",
    title: "Full attention: every word sees every word",
    short: "full",
    view: { step: "mask", mask: "full" },
    text: (answer, ctx) => {
      const n = answer?.tokens.length ?? 0;
      return (
        "A model that reads a whole sentence at once, such as BERT for search or classification, lets every word " +
        `look at every other word, before and after it. Nothing is hidden: each of the ${n} rows keeps all ${n} scores.` +
        (ctx.mask === "causal" ? " (The causal mask is on now: press M to see the full one.)" : "")
      );
    },
  },
  {
    id: "causal",
    title: "The causal mask: no peeking ahead",
    short: "causal",
    view: { step: "mask", mask: "causal" },
    text: (answer, ctx) => {
      const row = ctx.focusRow;
      const seen = answer ? visibleKeys(answer, row) : 0;
      return (
        "A model that writes text one word at a time, such as GPT, must not learn from words it has not written yet. " +
        "So before softmax the scores of every later word become −∞: only the lower triangle of the table survives. " +
        (answer ? `${quote(answer.tokens[row])} may look at ${seen} word${seen === 1 ? "" : "s"}: itself and those before it.` : "")
      );
    },
  },
  {
    id: "weights",
    title: "After softmax: hidden words get exactly 0",
    short: "weights",
    view: { step: "softmax", mask: "causal" },
    text: (answer, ctx) => {
      const row = ctx.focusRow;
      return (
        "e raised to −∞ is 0, so a hidden word gets no weight at all, and the visible ones share the whole 1 between them. " +
        (answer && !ctx.withheld ? `Under the ${ctx.mask} mask ${quote(answer.tokens[row])} splits its attention as ${sharesText(answer, row)}.` : "")
      );
    },
  },
  {
    id: "difference",
    title: "Side by side: what the mask changes",
    short: "difference",
    view: { step: "softmax" },
    compare: true,
    figure: "#compare-tables table",
    text: () =>
      "Beside the view, the two weight tables stand side by side with their difference (causal − full). " +
      "The first word can only look at itself, so it keeps all its attention; later rows lose what they gave to the " +
      "words after them and hand it to the words before.",
  },
];

function numbers(answer, stepId, ctx) {
  const row = ctx.focusRow;
  const out = [
    { label: "focused query", value: quote(answer.tokens[row]), testid: "num-focus" },
    { label: "mask", value: ctx.mask, testid: "num-mask" },
    { label: "keys it may see", value: String(visibleKeys(answer, row)), testid: "num-visible" },
  ];
  if ((stepId === "weights" || stepId === "difference") && !ctx.withheld) {
    out.push({ label: "row sum", value: fixed3(answer.weights[row].reduce((s, x) => s + x, 0)), testid: "num-rowsum" });
  }
  return out;
}

function code(answer, stepId, ctx) {
  if (ctx.withheld && (stepId === "weights" || stepId === "difference")) stepId = "causal"; // the givens: the masked scores
  const data = ctx.data ?? answer;
  const focus = data === answer ? ctx.focusRow : ctx.focus;
  const head = [...preamble(data, ctx), ...stageLines("scale", "full")];
  const causal = "causal = np.where(np.tril(np.ones((n, n), dtype=bool)), scaled, -np.inf)  # later keys → −∞";
  const softmax = [
    "",
    "",
    "def softmax(m):  # row by row; e^−∞ = 0",
    "    e = np.exp(m - m.max(axis=1, keepdims=True))",
    "    return e / e.sum(axis=1, keepdims=True)",
    "",
    "",
  ];
  const tail = `focus = ${focus}  # ${JSON.stringify(data.tokens[focus] ?? "")}`;
  if (stepId === "full" || stepId === "causal") {
    const mask = ctx.mask;
    return [
      ...head,
      mask === "causal" ? causal : "full = scaled.copy()  # the full mask hides nothing",
      tail,
      `print(json.dumps({"step": "${stepId}", "mask": "${mask}", "masked": plain(${mask})}))`,
    ].join("\n");
  }
  if (stepId === "weights") {
    const mask = ctx.mask;
    return [
      ...head,
      mask === "causal" ? causal : "full = scaled.copy()  # the full mask hides nothing",
      ...softmax,
      `weights = softmax(${mask})`,
      tail,
      "print(words[focus], plain(weights)[focus])",
      `print(json.dumps({"step": "weights", "mask": "${mask}", "weights": plain(weights)}))`,
    ].join("\n");
  }
  return [
    ...head,
    "full = scaled.copy()  # the full mask hides nothing",
    causal,
    ...softmax,
    "w_full, w_causal = softmax(full), softmax(causal)",
    "change = w_causal - w_full  # what the mask moves, row by row",
    tail,
    'print(json.dumps({"step": "difference", "full": plain(w_full), "causal": plain(w_causal), "change": plain(change)}))',
  ].join("\n");
}

const withCtx = (fn) => (answer, ...rest) => fn(answer, ...rest.slice(0, -1), attentionCtx(rest[rest.length - 1]));

export default {
  id: "masks",
  title: "Full vs causal",
  summary: "BERT lets every word see every word; GPT hides the words ahead.",
  ...attentionChapter,
  steps: STEPS.map((s) => ({ ...s, text: typeof s.text === "function" ? withCtx(s.text) : s.text })),
  numbers: withCtx(numbers),
  code: withCtx(code),
};
