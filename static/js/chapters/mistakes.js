// Chapter `mistakes`: three classic mistakes in writing attention, made on purpose by the server
// (POST /api/attention with "mistake"), each beside the right result, with what breaks: rows that
// no longer sum to 1, weight the hidden words take, a saturated softmax. Then the caveat: weights
// show where information flows in one layer, not why a model decides.
//
// Its words are in the catalogs (keys "chapter.mistakes.…", chapters/CONTRACT.md "Words in every
// language"); the example's words are the page language's where it carries them ("el gato comió su
// pescado"), its numbers the same.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { has, integer, t } from "../i18n.js";
import { pyMatrix, pyStr, pyStrings } from "../pycode.js";
import { HeadGrids } from "../scene/headgrids.js";
import { exampleNote, exampleWords, matrixTable, picker, quote, scroller } from "./widgets.js";

/** This chapter's message `key` (chapter.mistakes.<key>) with `values`. */
const say = (key, values) => t(`chapter.mistakes.${key}`, values);
const MISTAKES = ["no-scale", "softmax-columns", "mask-after-softmax"];
/** Each mistake's catalog name: what it is called on the page (captions and the 3D view), never the API's name. */
const KEYS = { "no-scale": "noScale", "softmax-columns": "softmaxColumns", "mask-after-softmax": "maskAfterSoftmax" };
const named = (id) => say(`named.${KEYS[id]}`);
/** A range of numbers, "0.716 … 1.000". */
const span = (xs) => `${fixed3(Math.min(...xs))} … ${fixed3(Math.max(...xs))}`;

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

/** The words the page shows: the example's in the page's language where it carries them. */
const wordsOf = (a) => a.words;

function focusOf(a, ctx) {
  const f = ctx.params.word === "" ? NaN : Number(ctx.params.word);
  if (Number.isInteger(f) && f >= 0 && f < a.right.tokens.length) return f;
  const its = a.right.tokens.indexOf("its"); // the word the cat example follows
  return its >= 0 ? its : a.right.tokens.length - 1;
}

/** A step's getters for its title and short name (read when drawn, in the page's language). */
const step = ({ id, ...rest }) => ({
  id,
  get title() {
    return say(`${KEYS[id] ?? id}.title`);
  },
  get short() {
    return say(`${KEYS[id] ?? id}.short`);
  },
  ...rest,
});

const STEPS = [
  step({
    id: "no-scale",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const r = a.right;
      const w = a.wrong["no-scale"];
      const note = exampleNote(a.example); // where the example's words stay English, the line that says so
      return (
        say("noScale.text", {
          dk: integer(r.d_k),
          root: fixed3(Math.sqrt(r.d_k)),
          word: wordsOf(a)[f],
          rightMax: fixed3(rowMax(r.weights)[f]),
          wrongMax: fixed3(rowMax(w.weights)[f]),
          rightH: fixed3(entropy(r.weights)[f]),
          wrongH: fixed3(entropy(w.weights)[f]),
        }) + (note ? ` ${note}` : "")
      );
    },
  }),
  step({
    id: "softmax-columns",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const sums = rowSums(a.wrong["softmax-columns"].weights);
      return say("softmaxColumns.text", { min: fixed3(Math.min(...sums)), max: fixed3(Math.max(...sums)), word: wordsOf(a)[f], sum: fixed3(sums[f]) });
    },
  }),
  step({
    id: "mask-after-softmax",
    figure: "#chapter-stage, [data-testid=mistake-wrong]", // the mistaken table; the right one follows
    text: (a, ctx) => {
      const f = focusOf(a, ctx);
      const r = a.right;
      const w = a.wrong["mask-after-softmax"].weights;
      const sums = rowSums(w);
      const lost = sums.map((s) => 1 - s);
      const worst = lost.indexOf(Math.max(...lost));
      const words = wordsOf(a);
      return say("maskAfterSoftmax.text", {
        min: fixed3(Math.min(...sums)),
        max: fixed3(Math.max(...sums)),
        worst: words[worst],
        lost: fixed3(lost[worst]),
        word: words[f],
        sum: fixed3(sums[f]),
        last: words[words.length - 1],
        rightChange: fixed3(earlierChange(r.weights, a.leak.right.weights)),
        wrongChange: fixed3(earlierChange(w, a.leak.wrong.weights)),
      });
    },
  }),
  step({
    id: "caveat",
    figure: "#chapter-stage, [data-testid=mistakes-caveat]",
    text: () => say("caveat.text"),
  }),
];

function breaks(a, id) {
  const r = a.right;
  const w = a.wrong[id].weights;
  if (id === "no-scale") {
    return [
      [say("breaks.max"), fixed3(mean(rowMax(r.weights))), fixed3(mean(rowMax(w))), "mistake-max"],
      [say("breaks.entropy"), fixed3(mean(entropy(r.weights))), fixed3(mean(entropy(w))), "mistake-entropy"],
    ];
  }
  if (id === "softmax-columns") {
    return [
      [say("breaks.rowSums"), span(rowSums(r.weights)), span(rowSums(w)), "mistake-rowsums"],
      [say("breaks.colSums"), say("breaks.vary"), span(colSums(w)), "mistake-colsums"],
    ];
  }
  const s = rowSums(w);
  const lost = s.map((x) => 1 - x);
  return [
    [say("breaks.smallest"), fixed3(Math.min(...rowSums(r.weights))), fixed3(Math.min(...s)), "mistake-rowsums"],
    [say("breaks.lost"), fixed3(Math.max(...hiddenShare(r.weights, "causal"))), fixed3(Math.max(...lost)), "mistake-lost"],
    [
      say("breaks.leak"),
      fixed3(earlierChange(r.weights, a.leak.right.weights)),
      fixed3(earlierChange(w, a.leak.wrong.weights)),
      "mistake-leak",
    ],
  ];
}

function numbers(a, stepId, ctx) {
  const f = focusOf(a, ctx);
  const out = [{ label: say("number.word"), value: quote(wordsOf(a)[f]), testid: "mistake-word" }];
  if (stepId === "caveat") return out;
  const w = a.wrong[stepId].weights;
  out.push({ label: say("number.rightSum"), value: fixed3(rowSums(a.right.weights)[f]), testid: "mistake-right-sum" });
  out.push({ label: say("number.wrongSum"), value: fixed3(rowSums(w)[f]), testid: "mistake-wrong-sum" });
  out.push({ label: say("number.rightMax"), value: fixed3(rowMax(a.right.weights)[f]), testid: "mistake-right-max" });
  out.push({ label: say("number.wrongMax"), value: fixed3(rowMax(w)[f]), testid: "mistake-wrong-max" });
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
      const words = wordsOf(a);
      body.classList.toggle("mistakes-pair-view", stepId !== "caveat");
      const title = (e) => (has(`example.${e.id}.title`) ? t(`example.${e.id}.title`) : e.title);
      controls.replaceChildren(
        picker(say("pick.example"), a.examples.map((e) => [e.id, title(e)]), ctx.params.example, (v) => ctx.setParams({ example: v, word: "" }), "mistakes-example"),
        picker(say("pick.word"), words.map((w, i) => [i, w]), f, (v) => ctx.setParams({ word: v }), "mistakes-wordpick"),
      );
      const withSums = (w) => w.map((row) => [...row, row.reduce((s, x) => s + x, 0)]);
      const cols = [...words, "Σ"];
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
      right.append(scroller(plainSums(matrixTable(withSums(r.weights), { caption: say("caption.right"), rowNames: words, colNames: cols, shade: true, testid: "mistake-right" }))));
      if (stepId === "caveat") {
        const note = el("p", { className: "caveat", dataset: { testid: "mistakes-caveat" } });
        note.textContent = say("caveat.note");
        body.replaceChildren(note, right);
        grids?.update([{ title: say("grid.right"), weights: r.weights }], words, { perRow: 2, focus: f });
        return;
      }
      const w = a.wrong[stepId];
      const wrong = el("div", { className: "wrong" });
      const table = matrixTable(withSums(w.weights), { caption: say("caption.wrong", { name: named(stepId) }), rowNames: words, colNames: cols, shade: true, testid: "mistake-wrong" });
      wrong.append(scroller(plainSums(table)));
      const pair = el("div", { className: "mistake-pair" });
      pair.append(wrong, right); // the mistaken table first, where the first screen ends
      const list = el("table", { className: "mini-matrix", dataset: { testid: "mistake-breaks" } });
      list.append(el("caption", {}, say("caption.breaks")));
      const head = el("tr");
      head.append(el("th"), el("th", { scope: "col" }, say("grid.right")), el("th", { scope: "col" }, say("grid.wrong")));
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
          { title: say("grid.right"), weights: r.weights },
          { title: say("grid.wrong"), weights: w.weights }, // which one: the step's title says it
        ],
        words,
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
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
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
    // the words shown: the example's in the page's language where it carries them (the numbers are the same)
    const words = exampleWords(ex.id ?? ctx.params.example, answers[0].tokens);
    return { examples, right: answers[0], wrong, leak: { right: answers[4], wrong: answers[5] }, words, example: ex.id ?? ctx.params.example };
  },
  mount,
  numbers,
  code,
};
