// Chapter `steps`: the five steps of one attention head (score → scale → mask → softmax → mix),
// drawn by the attention view that main.js owns (table, 3D links, worked arithmetic, editor,
// sentence mode). This module is the chapter's words, its numbers list and its NumPy panel.
//
// An attention chapter's functions get `answer` = the API response as shown (word pieces
// merged when the page merges them) and ctx = { focusRow, focus, mask, sentenceMode, data, page }:
// focusRow = the focused row as shown, focus = the model's token index, data = the unmerged response.

import { fixed3 } from "../format.js";
import { pyMatrix, pyStrings } from "../pycode.js";
import { STEPS, stepText } from "../steps.js";

const quote = (w) => `“${w}”`;

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
  const word = answer.tokens[row];
  const keys = ranked(answer, row);
  if (!keys.length) return "";
  const [a, b] = keys;
  const name = (k) => quote(answer.tokens[k.j]);
  const share = (k) => fixed3(k.w);
  if (b && a.w - b.w < 0.05) {
    return (
      `Here ${quote(word)} splits its attention between ${name(a)} (${share(a)}) and ${name(b)} (${share(b)}), ` +
      "so its z is a blend of their values rather than either one."
    );
  }
  if (/^\[[A-Z]+\]$/.test(answer.tokens[a.j]) && a.j !== row && a.w >= 0.5) {
    return (
      `Here ${quote(word)} gives ${share(a)} of its attention to ${name(a)}, a special token that many heads use ` +
      "as a resting place when no word answers their query: z then carries little from the other words."
    );
  }
  if (a.j === row && a.w >= 0.5) {
    return `Here ${quote(word)} attends mostly to itself (${share(a)}), so its z stays close to its own value.`;
  }
  if (a.w >= 0.5) {
    return (
      `Here ${quote(word)} gives ${share(a)} of its attention to ${name(a)}, so its z is mostly the value of ${name(a)}: ` +
      `that is how ${quote(word)} ends up knowing about ${name(a)}.`
    );
  }
  return (
    `Here ${quote(word)} spreads its attention: the most goes to ${name(a)} (${share(a)})` +
    (b ? `, then ${name(b)} (${share(b)})` : "") +
    ", so its z is a mix of several values."
  );
}

const MIX_BASE =
  "Finally each word collects the values v, the content behind each key, in proportion to " +
  "its weights: z = Σ weight × v. The new vector z mostly carries the value of the words it " +
  "attended to most.";

const vec = (row) => `[${row.map(fixed3).join(", ")}]`;

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

function stepCode(answer, stepId, ctx) {
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
  const out = [{ label: "focused query", value: quote(word), testid: "num-focus" }];
  if (stepId === "softmax" || stepId === "mix") {
    const [top] = ranked(answer, row);
    if (top) out.push({ label: "strongest key", value: `${quote(answer.tokens[top.j])} ${fixed3(top.w)}`, testid: "num-top" });
    const sum = answer.weights[row].reduce((s, x) => s + x, 0);
    out.push({ label: "row sum", value: fixed3(sum), testid: "num-rowsum" });
  } else {
    const stage = answer[{ score: "scores", scale: "scaled", mask: "masked" }[stepId]];
    const values = stage?.[row] ?? [];
    let best = -1;
    values.forEach((x, j) => {
      if (x !== null && (best < 0 || x > values[best])) best = j;
    });
    if (best >= 0) out.push({ label: "largest score", value: `${quote(answer.tokens[best])} ${fixed3(values[best])}`, testid: "num-top" });
  }
  if (stepId === "mix" && answer.output?.[row]) out.push({ label: "z", value: vec(answer.output[row]), testid: "num-z" });
  return out;
}

export default {
  id: "steps",
  title: "The five steps of attention",
  summary: "Score, scale, mask, softmax, mix: one head, every number.",
  attention: true,
  steps: STEPS.map((s) => ({
    id: s.id,
    title: s.title,
    short: s.short,
    view: { step: s.id },
    text: (answer, ctx) => (s.id === "mix" && answer ? `${MIX_BASE} ${mixClosing(answer, ctx.focusRow)}` : stepText(s, ctx.mask)),
  })),
  numbers: stepNumbers,
  code: stepCode,
};
