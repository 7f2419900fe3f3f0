// Chapter `steps`: the five steps of one attention head (score → scale → mask → softmax → mix),
// drawn by the attention view (static/js/attention/: the table, the 3D links, the worked
// arithmetic, the editor, sentence mode). The chapter mounts that view, and gives its words, its
// numbers list and its NumPy panel.
//
// The attention view's answer is the page's (`live`): `answer` = the API response as shown (word
// pieces merged when the page merges them); the functions below read the rest through
// attentionCtx(ctx) = { focusRow, focus, mask, sentenceMode, data, withheld }: focusRow = the
// focused row as shown, focus = the model's token index, data = the unmerged response,
// withheld = nothing derived from the weights may show (a quiz, predict first).
//
// Its words are in the catalogs (keys "chapter.steps.…"; the five stages' own in attention/stages.js),
// read when drawn (chapters/CONTRACT.md: "Words in every language").

import { fixed3 } from "../format.js";
import { listOf, t } from "../i18n.js";
import { pyMatrix, pyNum, pyStrings } from "../pycode.js";
import { STEPS, stepText } from "../attention/stages.js";

/** What an attention chapter's functions read beside the answer (see the header). */
export function attentionCtx(ctx) {
  const v = ctx.attention.now ?? {};
  return { focusRow: v.focusRow ?? 0, focus: v.focus ?? 0, mask: ctx.mask, sentenceMode: Boolean(v.sentenceMode), data: v.data, withheld: v.withheld ?? null };
}

/** The page's controls the attention chapters use. */
export const ATTENTION_CONTROLS = ["example", "sentence", "try", "mask", "predict"];

/** An attention chapter's module parts: its view is the attention view, its answer the page's. */
export const attentionChapter = {
  controls: ATTENTION_CONTROLS,
  mount: (ctx) => ctx.attention.mount(),
  live(ctx) {
    const v = ctx.attention.now;
    return { answer: v?.shown ?? null, ready: Boolean(v?.ready) };
  },
};

/** This chapter's message `key` (chapter.steps.<key>) with `values`. */
const say = (key, values) => t(`chapter.steps.${key}`, values);
const quote = (w) => t("format.quote", { text: w });

/** The focused row's keys, strongest first: [{ j, w }] (hidden keys left out). */
function ranked(answer, row) {
  return answer.weights[row]
    .map((w, j) => ({ j, w }))
    .filter(({ j }) => answer.masked[row][j] !== null)
    .sort((a, b) => b.w - a.w);
}

/**
 * The mix step's closing sentence: what the focused word actually attended to (issue 11, item 1),
 * under either mask, for the hand-set example and for a real sentence alike.
 */
export function mixClosing(answer, row) {
  const keys = ranked(answer, row);
  if (!keys.length) return "";
  const [a, b] = keys;
  const values = { word: answer.tokens[row], a: answer.tokens[a.j], wa: fixed3(a.w) };
  if (b) Object.assign(values, { b: answer.tokens[b.j], wb: fixed3(b.w) });
  if (b && a.w - b.w < 0.05) return say("mix.split", values);
  if (/^\[[A-Z]+\]$/.test(answer.tokens[a.j]) && a.j !== row && a.w >= 0.5) return say("mix.sink", values);
  if (a.j === row && a.w >= 0.5) return say("mix.self", values);
  if (a.w >= 0.5) return say("mix.one", values);
  return say("mix.spread", { b: "", wb: "", ...values, second: String(Boolean(b)) });
}

const vec = (row) => `[${listOf(row.map(fixed3))}]`;

// ---- the NumPy panel -------------------------------------------------------------------------

/** The code's opening lines: the words, Q, K, V and the focused query. */
export function preamble(answer, ctx) {
  const lines = ["import json", "", "import numpy as np", ""];
  if (ctx.sentenceMode) {
    lines.push(
      `# ${answer.tokens.length} tokens of the real model, layer ${answer.layer}, head ${answer.head}: its own q, k, v`,
    );
    if (answer.mean_over?.length) {
      lines.push(
        "# (a mean over heads: the page's weights are the mean of each head's weights; this code",
        "#  runs attention once on the mean q, k, v, so its numbers differ from the page's)",
      );
    }
  }
  lines.push(
    `words = ${pyStrings(answer.tokens)}`,
    `Q = ${pyMatrix(answer.q)}  # one query per word`,
    `K = ${pyMatrix(answer.k)}  # one key per word`,
    `V = ${pyMatrix(answer.v)}  # one value per word`,
    "n, d_k = Q.shape",
    "",
    "",
    "def plain(m):  # JSON has no −∞: a hidden key prints as null",
    "    return [[None if np.isinf(x) else round(float(x), 6) for x in row] for row in np.atleast_2d(m)]",
    "",
    "",
  );
  return lines;
}

/** Lines that compute the attention stages up to `upto` (score … mix) under `mask`. */
export function stageLines(upto, mask) {
  const order = ["score", "scale", "mask", "softmax", "mix"];
  const k = order.indexOf(upto);
  const lines = ["scores = Q @ K.T  # 1. score: n × n, row i = query i against every key"];
  if (k >= 1) lines.push("scaled = scores / np.sqrt(d_k)  # 2. scale by √d_k");
  if (k >= 2) {
    lines.push(
      mask === "causal"
        ? "masked = np.where(np.tril(np.ones((n, n), dtype=bool)), scaled, -np.inf)  # 3. causal: later keys → −∞"
        : "masked = scaled.copy()  # 3. the full mask hides nothing",
    );
  }
  if (k >= 3) {
    lines.push(
      "e = np.exp(masked - masked.max(axis=1, keepdims=True))  # 4. softmax, row by row",
      "weights = e / e.sum(axis=1, keepdims=True)  # each row sums to 1",
    );
  }
  if (k >= 4) lines.push("Z = weights @ V  # 5. mix: z_i = Σ_j weight_ij · v_j");
  return lines;
}

const RESULT = { score: "scores", scale: "scaled", mask: "masked", softmax: "weights", mix: "Z" };
const KEY = { score: "scores", scale: "scaled", mask: "masked", softmax: "weights", mix: "output" };

/**
 * A long sentence's code (lod.js: the page has the rows around the focus, and the table in blocks):
 * the focused query's row over every key, from its scores as the server sent them, step by step;
 * the mix step's z needs every key's v (n × d numbers), so it prints the server's.
 */
function longStepCode(data, stepId, ctx) {
  const i = ctx.focus;
  const order = ["score", "scale", "mask", "softmax", "mix"];
  const k = order.indexOf(stepId);
  const lines = [
    "import numpy as np",
    "",
    `# ${data.tokens.length} tokens of the real model, layer ${data.layer}, head ${data.head}: too many for every q, k and v here;`,
    "# the focused query's row of scores against every key is the server's (POST /api/attention, detail summary)",
    `words = ${pyStrings(data.tokens)}`,
    `focus = ${i}  # ${JSON.stringify(data.tokens[i] ?? "")}`,
    `d_k = ${data.d_k}`,
    `scores = np.array([${data.scores[i].map(pyNum).join(", ")}])  # 1. score: q·k for every key`,
  ];
  if (k >= 1) lines.push("scaled = scores / np.sqrt(d_k)  # 2. scale by √d_k");
  if (k >= 2) {
    lines.push(
      ctx.mask === "causal"
        ? "masked = np.where(np.arange(len(words)) <= focus, scaled, -np.inf)  # 3. causal: later keys → −∞"
        : "masked = scaled.copy()  # 3. the full mask hides nothing",
    );
  }
  if (k >= 3) lines.push("e = np.exp(masked - masked.max())  # 4. softmax of the row", "weights = e / e.sum()  # sums to 1");
  if (k >= 4) lines.push(`z = np.array([${data.output[i].map(pyNum).join(", ")}])  # 5. mix: Σ_j weight_j · v_j, over every key's v (the server's)`);
  const last = { score: "scores", scale: "scaled", mask: "masked", softmax: "weights", mix: "z" }[stepId];
  lines.push(stepId === "mix" ? "print(words[focus], z.round(6).tolist())" : `strongest = np.argsort(-${last})[:8]`);
  if (stepId !== "mix") lines.push(`print(words[focus], [(words[j], round(float(${last}[j]), 6)) for j in strongest])`);
  return lines.join("\n");
}

function stepCode(answer, stepId, ctx) {
  if ((ctx.data ?? answer)?.detail === "summary") return longStepCode(ctx.data ?? answer, stepId, ctx);
  // merged word pieces are a display: the code runs on the model's own tokens (ctx.data)
  const data = ctx.data ?? answer;
  const focus = data === answer ? ctx.focusRow : ctx.focus;
  answer = data;
  return [
    ...preamble(answer, ctx),
    ...stageLines(stepId, ctx.mask),
    `focus = ${focus}  # ${JSON.stringify(answer.tokens[focus] ?? "")}`,
    `print(words[focus], plain(${RESULT[stepId]})[focus])  # the focused row`,
    `print(json.dumps({"step": "${stepId}", "${KEY[stepId]}": plain(${RESULT[stepId]})}))`,
  ].join("\n");
}

// ---- the numbers list ---------------------------------------------------------------------

function stepNumbers(answer, stepId, ctx) {
  const row = ctx.focusRow;
  const word = answer.tokens[row];
  const out = [{ label: say("number.focus"), value: quote(word), testid: "num-focus" }];
  if (ctx.withheld) return out; // no strongest key, no largest score: that is the question
  if (stepId === "softmax" || stepId === "mix") {
    const [top] = ranked(answer, row);
    if (top) out.push({ label: say("number.top"), value: `${quote(answer.tokens[top.j])} ${fixed3(top.w)}`, testid: "num-top" });
    const sum = answer.weights[row].reduce((s, x) => s + x, 0);
    out.push({ label: say("number.rowSum"), value: fixed3(sum), testid: "num-rowsum" });
  } else {
    const stage = answer[{ score: "scores", scale: "scaled", mask: "masked" }[stepId]];
    const values = stage?.[row] ?? [];
    let best = -1;
    values.forEach((x, j) => {
      if (x !== null && (best < 0 || x > values[best])) best = j;
    });
    if (best >= 0) out.push({ label: say("number.largest"), value: `${quote(answer.tokens[best])} ${fixed3(values[best])}`, testid: "num-top" });
  }
  if (stepId === "mix" && answer.output?.[row]) out.push({ label: say("number.z"), value: vec(answer.output[row]), testid: "num-z" });
  return out;
}

/**
 * The line saying that the example's words stay English where the language cannot carry "the cat
 * ate its fish" word for word (its catalog's example.<id>.note, with a gloss; empty elsewhere): the
 * first step's, while the view shows that example's words.
 */
function wordsNote(answer) {
  const id = "the-cat-ate-its-fish";
  const note = answer && answer.tokens.join(" ") === t(`example.${id}.tokens`) ? t(`example.${id}.note`) : "";
  return note ? ` ${note}` : "";
}

/** The step's words: the mix step closes on what the focused word attended to (unless withheld). */
function stepWords(s, answer, ctx) {
  if (s.id === "mix" && answer && !ctx.withheld) return `${stepText(s, ctx.mask)} ${mixClosing(answer, ctx.focusRow)}`;
  return stepText(s, ctx.mask) + (s.id === STEPS[0].id ? wordsNote(answer) : "");
}

export default {
  id: "steps",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  ...attentionChapter,
  steps: STEPS.map((s) => ({
    id: s.id,
    get title() {
      return s.title;
    },
    get short() {
      return s.short;
    },
    view: { step: s.id },
    text: (answer, ctx) => stepWords(s, answer, attentionCtx(ctx)),
  })),
  numbers: (answer, stepId, ctx) => stepNumbers(answer, stepId, attentionCtx(ctx)),
  // while the weights are withheld the code stops at the masked scores (the question's givens)
  code: (answer, stepId, ctx) => {
    const c = attentionCtx(ctx);
    return stepCode(answer, c.withheld && (stepId === "softmax" || stepId === "mix") ? "mask" : stepId, c);
  },
};
