// Chapter `mistakes`: three classic mistakes in writing attention, made on purpose by the server
// (POST /api/attention with "mistake"), each beside the right result, with what breaks: rows that
// no longer sum to 1, weight the hidden words take, a saturated softmax. Then the caveat: weights
// show where information flows in one layer, not why a model decides.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { pyMatrix, pyStr, pyStrings } from "../pycode.js";
import { HeadGrids } from "../scene/headgrids.js";
import { matrixTable, picker, scroller } from "./widgets.js";

const quote = (w) => `“${w}”`;
const MISTAKES = ["no-scale", "softmax-columns", "mask-after-softmax"];
/** What each mistake is called on the page (captions and the 3D view): never the API's names. */
const NAMED = { "no-scale": "no ÷√d_k", "softmax-columns": "softmax down the columns", "mask-after-softmax": "mask after softmax" };

// What the page reads off the server's weights (sums, largest weight, entropy): adding up, no attention math.
const rowSums = (w) => w.map((row) => row.reduce((s, x) => s + x, 0));
const colSums = (w) => w[0].map((_, j) => w.reduce((s, row) => s + row[j], 0));
const rowMax = (w) => w.map((row) => Math.max(...row));
/** Entropy in nats (natural log, as the chapter on √d_k) of each row as given (a row that does not sum to 1 is
 *  not a distribution: shown anyway). */
const entropy = (w) => w.map((row) => -row.reduce((s, x) => (x > 0 ? s + x * Math.log(x) : s), 0));
const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const hiddenShare = (w, mask) => w.map((row, i) => (mask === "causal" ? row.reduce((s, x, j) => (j > i ? s + x : s), 0) : 0));

/** The largest change, over the rows before the last word, between two weight tables. */
function earlierChange(w1, w2) {
  let most = 0;
  for (let i = 0; i < w1.length - 1; i++) for (let j = 0; j < w1.length; j++) most = Math.max(most, Math.abs(w1[i][j] - w2[i][j]));
  return most;
}

function focusOf(a, ctx) {
  const f = ctx.params.word === "" ? NaN : Number(ctx.params.word);
  if (Number.isInteger(f) && f >= 0 && f < a.right.tokens.length) return f;
  const its = a.right.tokens.indexOf("its"); // the word the cat example follows
  return its >= 0 ? its : a.right.tokens.length - 1;
}

const STEPS = [
  {
    id: "no-scale",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    title: "Forgetting ÷√d_k",
    short: "no ÷√d_k",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const r = a.right;
      const w = a.wrong["no-scale"];
      return (
        "Every table in this chapter uses the causal mask (each word sees itself and the words before it). " +
        `Without the division the scores stay √${r.d_k} = ${fixed3(Math.sqrt(r.d_k))} times larger, and softmax turns large gaps into ` +
        `near-certainty. For ${quote(r.tokens[f])} the largest weight goes from ${fixed3(rowMax(r.weights)[f])} to ${fixed3(rowMax(w.weights)[f])} ` +
        `and the spread (entropy) falls from ${fixed3(entropy(r.weights)[f])} to ${fixed3(entropy(w.weights)[f])} nats. ` +
        "On a toy example it still works; in a large model, with d_k of 64 or 128, the softmax saturates and training barely moves it."
      );
    },
  },
  {
    id: "softmax-columns",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    title: "Softmax over the wrong axis",
    short: "wrong axis",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const r = a.right;
      const w = a.wrong["softmax-columns"].weights;
      const sums = rowSums(w);
      return (
        "Softmax must run along each row: one query sharing its attention among the keys. Run down the columns instead and each key's " +
        `weights sum to 1 over the queries, while a query's row sums to anything: here from ${fixed3(Math.min(...sums))} to ` +
        `${fixed3(Math.max(...sums))}. The row of ${quote(r.tokens[f])} sums to ${fixed3(sums[f])}, so its output is no longer a weighted average of the values.`
      );
    },
  },
  {
    id: "mask-after-softmax",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    title: "Masking after softmax",
    short: "mask late",
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const r = a.right;
      const w = a.wrong["mask-after-softmax"].weights;
      const sums = rowSums(w);
      const lost = sums.map((s) => 1 - s);
      const worst = lost.indexOf(Math.max(...lost));
      return (
        "The causal mask must set hidden scores to −∞ before softmax. Zeroing them after it is too late: the softmax already gave the " +
        `later words a share, and those shares are then thrown away, so the rows sum to between ${fixed3(Math.min(...sums))} and ` +
        `${fixed3(Math.max(...sums))} instead of 1 (the Σ column). ${quote(r.tokens[worst])} lost the most: ${fixed3(lost[worst])} went to words ` +
        `it must not see. The row of ${quote(r.tokens[f])} sums to ${fixed3(sums[f])}. Worse, every visible weight was computed with the future ` +
        `words in the softmax's sum. Change only the key of the last word, ${quote(r.tokens[r.tokens.length - 1])}: done right, no earlier row ` +
        `moves (largest change ${fixed3(earlierChange(r.weights, a.leak.right.weights))}); with the late mask the earlier rows change by up to ` +
        `${fixed3(earlierChange(w, a.leak.wrong.weights))}. The future leaks in.`
      );
    },
  },
  {
    id: "caveat",
    figure: "#chapter-stage, [data-testid=mistakes-caveat]",
    title: "What attention weights do not tell you",
    short: "caveat",
    text: () =>
      "One last mistake is one of reading, not of computing: a weight table shows where information flows in one head of one layer, " +
      "not why the model decides what it does. The value vectors, the other heads, W_O, the feed-forward networks and every later layer " +
      "all change what that information becomes. A large weight is a good question to ask, not an explanation.",
  },
];

function breaks(a, id) {
  const r = a.right;
  const w = a.wrong[id].weights;
  if (id === "no-scale") {
    return [
      ["largest weight, mean over rows", fixed3(mean(rowMax(r.weights))), fixed3(mean(rowMax(w))), "mistake-max"],
      ["entropy (nats), mean over rows", fixed3(mean(entropy(r.weights))), fixed3(mean(entropy(w))), "mistake-entropy"],
    ];
  }
  if (id === "softmax-columns") {
    const s = rowSums(w);
    return [
      ["row sums (should all be 1)", `${fixed3(Math.min(...rowSums(r.weights)))} … ${fixed3(Math.max(...rowSums(r.weights)))}`, `${fixed3(Math.min(...s))} … ${fixed3(Math.max(...s))}`, "mistake-rowsums"],
      ["column sums", "vary", `${fixed3(Math.min(...colSums(w)))} … ${fixed3(Math.max(...colSums(w)))}`, "mistake-colsums"],
    ];
  }
  const s = rowSums(w);
  const lost = s.map((x) => 1 - x);
  return [
    ["smallest row sum (should be 1)", fixed3(Math.min(...rowSums(r.weights))), fixed3(Math.min(...s)), "mistake-rowsums"],
    ["largest share lost to hidden words", fixed3(Math.max(...hiddenShare(r.weights, "causal"))), fixed3(Math.max(...lost)), "mistake-lost"],
    [
      "change the last word's key: largest change in earlier rows",
      fixed3(earlierChange(r.weights, a.leak.right.weights)),
      fixed3(earlierChange(w, a.leak.wrong.weights)),
      "mistake-leak",
    ],
  ];
}

function numbers(a, stepId, ctx) {
  const f = focusOf(a, ctx);
  const out = [{ label: "word", value: quote(a.right.tokens[f]), testid: "mistake-word" }];
  if (stepId === "caveat") return out;
  const w = a.wrong[stepId].weights;
  out.push({ label: "right: row sum", value: fixed3(rowSums(a.right.weights)[f]), testid: "mistake-right-sum" });
  out.push({ label: "mistake: row sum", value: fixed3(rowSums(w)[f]), testid: "mistake-wrong-sum" });
  out.push({ label: "right: largest weight", value: fixed3(rowMax(a.right.weights)[f]), testid: "mistake-right-max" });
  out.push({ label: "mistake: largest weight", value: fixed3(rowMax(w)[f]), testid: "mistake-wrong-max" });
  return out;
}

function code(a, stepId) {
  const r = a.right;
  const mistake = stepId === "caveat" ? null : stepId;
  return [
    "import json",
    "import numpy as np",
    "",
    `words = ${pyStrings(r.tokens)}`,
    `Q = ${pyMatrix(r.q)}`,
    `K = ${pyMatrix(r.k)}`,
    `V = ${pyMatrix(r.v)}`,
    "n, d_k = Q.shape",
    "hidden = ~np.tril(np.ones((n, n), dtype=bool))  # the causal mask: later words",
    "",
    "",
    "def softmax(s, axis):",
    "    e = np.exp(s - s.max(axis=axis, keepdims=True))",
    "    return e / e.sum(axis=axis, keepdims=True)",
    "",
    "",
    "def attention(mistake=None):",
    "    s = Q @ K.T",
    '    if mistake != "no-scale":',
    "        s = s / np.sqrt(d_k)  # the right way divides by √d_k",
    '    if mistake == "mask-after-softmax":',
    "        return np.where(hidden, 0.0, softmax(s, axis=1))  # too late: the rows no longer sum to 1",
    "    s = np.where(hidden, -np.inf, s)  # the right way: −∞ before softmax",
    '    return softmax(s, axis=0 if mistake == "softmax-columns" else 1)  # axis=1: each row sums to 1',
    "",
    "",
    "right = attention()",
    `wrong = attention(${mistake ? pyStr(mistake) : "None"})`,
    'print("row sums, right:", right.sum(axis=1).round(3), " mistake:", wrong.sum(axis=1).round(3))',
    `print(json.dumps({"step": ${pyStr(stepId)}, "right": right.round(10).tolist(), "wrong": wrong.round(10).tolist()}))`,
  ].join("\n");
}

function mount(ctx) {
  const controls = el("div", { className: "chapter-controls" });
  const body = el("div", { className: "mistakes-body", dataset: { testid: "mistakes-body" } });
  ctx.panel.append(body, controls); // the tables first: the step's text speaks of them
  const grids = ctx.stage ? new HeadGrids(ctx.stage) : null;

  return {
    update(a, stepId) {
      const r = a.right;
      const f = focusOf(a, ctx);
      body.classList.toggle("mistakes-pair-view", stepId !== "caveat");
      controls.replaceChildren(
        picker("example", a.examples.map((e) => [e.id, e.title]), ctx.params.example, (v) => ctx.setParams({ example: v, word: "" }), "mistakes-example"),
        picker("word", r.tokens.map((t, i) => [i, t]), f, (v) => ctx.setParams({ word: v }), "mistakes-wordpick"),
      );
      const withSums = (w) => w.map((row) => [...row, row.reduce((s, x) => s + x, 0)]);
      const cols = [...r.tokens, "Σ"];
      const right = el("div", { className: "right" });
      const plainSums = (table) => {
        // the Σ column is a check, not a weight: unshaded, and outlined where it is not 1
        table.querySelectorAll("tbody tr").forEach((tr) => {
          const cell = tr.lastElementChild;
          cell.style.background = "";
          cell.style.color = "";
          if (Math.abs(Number(cell.textContent.replace("\u2212", "-")) - 1) > 5e-4) cell.classList.add("off-sum");
        });
        return table;
      };
      right.append(scroller(plainSums(matrixTable(withSums(r.weights), { caption: "right (causal): weights", rowNames: r.tokens, colNames: cols, shade: true, testid: "mistake-right" }))));
      if (stepId === "caveat") {
        const note = el("p", { className: "caveat", dataset: { testid: "mistakes-caveat" } });
        note.textContent =
          "Attention weights show where information flows in one layer (here: one head, hand-set numbers), not why a model decides what it does.";
        body.replaceChildren(note, right);
        grids?.update([{ title: "right", weights: r.weights }], r.tokens, { perRow: 2, focus: f });
        return;
      }
      const w = a.wrong[stepId];
      const wrong = el("div", { className: "wrong" });
      const table = matrixTable(withSums(w.weights), { caption: `mistake (${NAMED[stepId]}): weights`, rowNames: r.tokens, colNames: cols, shade: true, testid: "mistake-wrong" });
      wrong.append(scroller(plainSums(table)));
      const pair = el("div", { className: "mistake-pair" });
      pair.append(wrong, right); // the mistaken table first, where the first screen ends
      const list = el("table", { className: "mini-matrix", dataset: { testid: "mistake-breaks" } });
      list.append(el("caption", {}, "What breaks (read off the two tables)"));
      const head = el("tr");
      head.append(el("th"), el("th", { scope: "col" }, "right"), el("th", { scope: "col" }, "mistake"));
      list.append(el("thead"));
      list.lastElementChild.append(head);
      const tb = el("tbody");
      for (const [label, good, bad, testid] of breaks(a, stepId)) {
        const tr = el("tr");
        tr.append(el("th", { scope: "row" }, label), el("td", { dataset: { testid: `${testid}-right` } }, good), el("td", { dataset: { testid: `${testid}-wrong` } }, bad));
        tb.append(tr);
      }
      list.append(tb);
      body.replaceChildren(pair, scroller(list));
      grids?.update(
        [
          { title: "right", weights: r.weights },
          { title: "mistake", weights: w.weights }, // which one: the step's title says it
        ],
        r.tokens,
        { perRow: 2, focus: f },
      );
    },
    dispose() {
      grids?.dispose();
      controls.remove();
      body.remove();
    },
  };
}

export default {
  id: "mistakes",
  title: "Common mistakes",
  summary: "Forgetting ÷√d_k, softmax over the wrong axis, masking after softmax: each beside the right (causal) result.",
  params: { example: "the-cat-ate-its-fish", word: "" },
  steps: STEPS,
  async load(ctx) {
    const [examples, ex] = await Promise.all([ctx.get("/api/examples"), ctx.get(`/api/examples/${encodeURIComponent(ctx.params.example)}`)]);
    const base = { tokens: ex.tokens, q: ex.q, k: ex.k, v: ex.v, mask: "causal" };
    // the leak: change only the last word's key (doubled, plus 1 in each number) and ask again
    const k2 = ex.k.map((row, i) => (i === ex.k.length - 1 ? row.map((x) => 2 * x + 1) : row));
    const changed = { ...base, k: k2 };
    const answers = await Promise.all([
      ctx.post("/api/attention", base),
      ...MISTAKES.map((m) => ctx.post("/api/attention", { ...base, mistake: m })),
      ctx.post("/api/attention", changed),
      ctx.post("/api/attention", { ...changed, mistake: "mask-after-softmax" }),
    ]);
    const wrong = Object.fromEntries(MISTAKES.map((m, i) => [m, answers[i + 1]]));
    return { examples, right: answers[0], wrong, leak: { right: answers[4], wrong: answers[5] } };
  },
  mount,
  numbers,
  code,
};
