// Chapter `masks`: full attention (BERT) against the causal mask (GPT), on the attention view
// (static/js/attention/), with the side-by-side difference of the two weight tables. Each step
// sets the view's step and mask (`view`); M still switches the mask by hand. Functions get the
// same `answer` and attentionCtx(ctx) as chapters/steps.js (a step's text reads it itself).
//
// Its words are in the catalogs (static/i18n/<lang>.json, keys "chapter.masks.…"), read when the
// lesson draws them: the title, summary and each step's title and short name are getters, and the
// texts and the numbers' labels call t() (chapters/CONTRACT.md: "Words in every language").

import { fixed3 } from "../format.js";
import { integer, t } from "../i18n.js";
import { attentionChapter, attentionCtx, preamble, stageLines } from "./steps.js";

/** This chapter's message `key` (chapter.masks.<key>) with `values`. */
const say = (key, values) => t(`chapter.masks.${key}`, values);
const quote = (w) => t("format.quote", { text: w });

function visibleKeys(answer, row) {
  return answer.masked[row].filter((x) => x !== null).length;
}

function sharesText(answer, row) {
  return answer.weights[row]
    .map((w, j) => ({ w, j }))
    .filter(({ j }) => answer.masked[row][j] !== null)
    .map(({ w, j }) => `${quote(answer.tokens[j])} ${fixed3(w)}`)
    .join(t("format.listSeparator"));
}

/**
 * The line saying that the example's words stay English, where the language cannot carry "the cat
 * ate its fish" word for word (its catalog's example.<id>.note; empty elsewhere): shown while the
 * view shows that example's words.
 */
function wordsNote(answer) {
  const id = "the-cat-ate-its-fish";
  const note = answer && answer.tokens.join(" ") === t(`example.${id}.tokens`) ? t(`example.${id}.note`) : "";
  return note ? ` ${note}` : "";
}

const STEPS = [
  {
    id: "full",
    get title() {
      return say("full.title");
    },
    get short() {
      return say("full.short");
    },
    view: { step: "mask", mask: "full" },
    text: (answer, raw) => {
      const ctx = attentionCtx(raw);
      const n = answer?.tokens.length ?? 0;
      return say("full.text", { n, causalOn: String(ctx.mask === "causal") }) + wordsNote(answer);
    },
  },
  {
    id: "causal",
    get title() {
      return say("causal.title");
    },
    get short() {
      return say("causal.short");
    },
    view: { step: "mask", mask: "causal" },
    text: (answer, raw) => {
      const ctx = attentionCtx(raw);
      const row = ctx.focusRow;
      const seen = answer ? visibleKeys(answer, row) : 0;
      return say("causal.text") + (answer ? " " + say("causal.seen", { word: answer.tokens[row], seen }) : "");
    },
  },
  {
    id: "weights",
    get title() {
      return say("weights.title");
    },
    get short() {
      return say("weights.short");
    },
    view: { step: "softmax", mask: "causal" },
    text: (answer, raw) => {
      const ctx = attentionCtx(raw);
      const row = ctx.focusRow;
      return (
        say("weights.text") +
        (answer && !ctx.withheld ? " " + say("weights.shares", { mask: ctx.mask, word: answer.tokens[row], shares: sharesText(answer, row) }) : "")
      );
    },
  },
  {
    id: "difference",
    get title() {
      return say("difference.title");
    },
    get short() {
      return say("difference.short");
    },
    view: { step: "softmax" },
    compare: true,
    figure: "#compare-tables table",
    text: () => say("difference.text"),
  },
];

function numbers(answer, stepId, ctx) {
  const row = ctx.focusRow;
  const out = [
    { label: say("number.focus"), value: quote(answer.tokens[row]), testid: "num-focus" },
    { label: say("number.mask"), value: say("number.maskName", { mask: ctx.mask }), testid: "num-mask" },
    { label: say("number.visible"), value: integer(visibleKeys(answer, row)), testid: "num-visible" },
  ];
  if ((stepId === "weights" || stepId === "difference") && !ctx.withheld) {
    out.push({ label: say("number.rowSum"), value: fixed3(answer.weights[row].reduce((s, x) => s + x, 0)), testid: "num-rowsum" });
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
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  ...attentionChapter,
  steps: STEPS,
  numbers: withCtx(numbers),
  code: withCtx(code),
};
