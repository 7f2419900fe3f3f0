// Chapter `tiles`: attention without the n × n table. The keys (and their values) are read in blocks
// of b; each query keeps three running numbers, the largest score m, the sum l of e^(s − m) and the sum
// o of e^(s − m)·v, and multiplies l and o by e^(m_old − m_new) when a bigger score arrives (Milakov &
// Gimelshein 2018; FlashAttention, Dao et al. 2022). After the last block o / l is attention's output,
// to the last digits. On the lesson's example (hand-set q, k, v) or a typed sentence through
// all-MiniLM-L6-v2. Every number comes from the server: POST /api/lesson/tiles, and POST /api/attention
// for the plain way beside it.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { pyMatrix, pyStr, pyStrings } from "../pycode.js";
import { TileGrid } from "../scene/tilegrid.js";
import { ANIMAL, picker, predictBox, quote, scrollBox, sentenceBox } from "./widgets.js";

const EXAMPLE = "the-cat-ate-its-fish";
const ROWS_SHOWN = 5; // a longer sentence's table shows this many queries, around the focused one
const COLS_SHOWN = 8; // … and this many keys of the whole table (the table step)
const TERMS = 3; // a sum written out term by term shows this many terms, then "+ …"
const CACHED = 8; // answers kept: moving the block along changes only what is shown, not the answer
const answers = new Map(); // request (JSON) → answer, the newest last

const MINUS = "\u2212";
/** 3 decimals; a small number that is not 0 in e-notation (α can be 1e−5); null (−∞) as −∞. */
function num(x) {
  if (x === null || x === undefined) return `${MINUS}∞`;
  if (x !== 0 && Math.abs(x) < 0.0005) return x.toExponential(1).replace("e-", `e${MINUS}`).replace("-", MINUS);
  return fixed3(x);
}
/** A vector, its first `count` numbers (a real head's has 32). */
const vec = (row, count = 3) => `[${row.slice(0, count).map(num).join(", ")}${row.length > count ? ", …" : ""}]`;
const grouped = (n) => n.toLocaleString("en");
const mib = (bytes) => `${(bytes / 2 ** 20).toLocaleString("en", { maximumFractionDigits: 2 })} MiB`;
const words = (a, s) => a.tokens.slice(s.start, s.stop).map(quote).join(", ");
/** A block's keys, the first and the last of a long one. */
const ends = (a, s) => (s.stop - s.start > 3 ? `${quote(a.tokens[s.start])} … ${quote(a.tokens[s.stop - 1])}` : words(a, s));

/** "e^(… − …)" with the true minus sign. */
const exp = (a, b) => `e^(${num(a)} ${MINUS} ${num(b)})`;

// ---- what the chapter shows: the focused query and how many blocks it has read ------------------

/** The query the lesson follows: “its” (the lesson's row), “it” in a sentence, else the last word. */
function plainFocus(a) {
  for (const w of ["its", "it"]) {
    const i = a.tokens.indexOf(w);
    if (i >= 0) return i;
  }
  const n = a.tokens.length;
  return a.tokens[n - 1] === "[SEP]" && n > 1 ? n - 2 : n - 1;
}

/** Where m grows most after the first block: { row, block, by } (null: m never grows later). */
export function biggestJump(a, rows = null) {
  let best = null;
  for (let t = 1; t < a.steps.length; t++) {
    for (const i of rows ?? a.tokens.keys()) {
      const before = a.steps[t - 1].m[i];
      const by = a.steps[t].m[i] - before;
      if (before !== null && by > 0 && (!best || by > best.by)) best = { row: i, block: t, by };
    }
  }
  return best;
}

/** The focused query: the one picked (params.word), else the step's own (rescale: where m grows most). */
function focusOf(a, ctx, stepId) {
  const w = ctx.params.word === "" ? NaN : Number(ctx.params.word);
  if (Number.isInteger(w) && w >= 0 && w < a.tokens.length) return w;
  if (stepId === "rescale") return biggestJump(a)?.row ?? plainFocus(a);
  return plainFocus(a);
}

/** Blocks read so far (1 … T): the one picked on this step (params.at = "step:k"), else the step's own. */
function atOf(a, ctx, stepId) {
  const T = a.steps.length;
  const [where, k] = String(ctx.params.at ?? "").split(":");
  if (where === stepId && Number.isInteger(Number(k)) && Number(k) >= 1 && Number(k) <= T) return Number(k);
  if (stepId === "finish") return T;
  if (stepId === "rescale") return (biggestJump(a, [focusOf(a, ctx, stepId)])?.block ?? 0) + 1;
  return 1;
}

/** The focused query's numbers before and after block t (0-based). */
function blockOf(a, t, f) {
  const s = a.steps[t];
  const before = t > 0 ? a.steps[t - 1] : null;
  return {
    s,
    keys: a.tokens.slice(s.start, s.stop),
    scores: s.scores[f],
    seen: s.top[f] !== null, // the mask leaves the query at least one key of the block
    mOld: before ? before.m[f] : null, // −∞
    lOld: before ? before.l[f] : 0,
    oOld: before ? before.o[f] : s.o[f].map(() => 0),
    top: s.top[f],
    m: s.m[f],
    alpha: s.alpha[f],
    p: s.p[f],
    l: s.l[f],
    o: s.o[f],
  };
}

/** The largest difference between two nested lists of numbers. */
function gap(x, y) {
  return Array.isArray(x) ? Math.max(0, ...x.map((v, i) => gap(v, y[i]))) : Math.abs(x - y);
}

/** A short number in e-notation for a tiny difference ("1.1e−16"), "0" for none. */
const tiny = (x) => (x === 0 ? "0" : x.toExponential(1).replace("e-", `e${MINUS}`));

/** [first, last): at most `count` of 0 … n − 1, around `focus`. */
function around(n, focus, count) {
  const first = Math.max(0, Math.min(n - count, focus - Math.floor(count / 2)));
  return [first, Math.min(n, first + count)];
}

// ---- the steps ---------------------------------------------------------------------------------

const who = (a, ctx, stepId) => quote(a.tokens[focusOf(a, ctx, stepId)]);
const held = (a) => `${a.held.tokens} × ${a.held.block} = ${grouped(a.held.tile)}`;
const HIDDEN = "The weights are hidden for now: think about your answer first.";

const STEPS = [
  {
    id: "table",
    title: "The plain way: the whole n × n table",
    short: "table",
    figure: "#chapter-stage, [data-testid=tiles-table]",
    ask: {
      q: "4,096 tokens, the plain way: how many scores held at once?",
      options: ["4,096", "about 17 million", "128"],
      answer: 1,
      why: (a) =>
        `One score for every query and every key: 4,096 × 4,096 = ${grouped(a.long.table)} numbers, ` +
        `${mib(a.long.table * a.long.bytes_per_number)} in float32, for every head of every layer.`,
    },
    text: (a) =>
      `Plain attention makes every score at once, each query against each key: ${a.tokens.length} × ` +
      `${a.tokens.length} = ${grouped(a.held.table)} numbers here, each row turned into weights by softmax. Softmax ` +
      `seems to need the whole row first: its largest score and the sum of its e^s. Fine for a few words; the ` +
      `question asks what it costs for a long prompt.`,
  },
  {
    id: "blocks",
    title: "Keys in blocks: only n × b scores at once",
    short: "blocks",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-nav]",
    ask: {
      q: "The block moves on. What happens to its scores?",
      options: ["kept for the end", "dropped: the next block makes its own", "added into the next block's"],
      answer: 1,
      why: (a) =>
        `Dropped: only what the running m, l and o took from them stays. So n × b = ${held(a)} scores exist at ` +
        "once, however long the rest of the prompt.",
    },
    text: (a) => {
      const T = a.steps.length;
      const last = a.steps[T - 1];
      const cut = last.stop - last.start < a.block ? ` (the last is shorter: ${a.block} does not divide ${a.tokens.length})` : "";
      return (
        `Cut the keys and their values into blocks of b = ${a.block}: ${a.steps.map((s) => `[${words(a, s)}]`).join(" ")}${cut}. ` +
        `Each block is read once: every query's scores against its keys only. The grey cells never exist. ` +
        `The arrows move the block along the keys.`
      );
    },
  },
  {
    id: "read",
    title: "Read a block: the running m, l and o",
    short: "read",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-arith]",
    ask: {
      q: "Why e^(s − m) and not e^s?",
      options: ["no e^ is above 1", "scores become positive", "it changes the answer"],
      answer: 0,
      why: (a, ctx) => {
        const f = focusOf(a, ctx, "read");
        return (
          "A score of 1,000 would make e^1000, far past the largest number a computer holds (about 1.8e308): it " +
          "overflows. Measured from m every e^(s − m) is at most 1, and m cancels in o / l, so the answer is the same " +
          `(m = ${num(a.steps[0].m[f])} for ${quote(a.tokens[f])} after block 1).`
        );
      },
    },
    text: (a, ctx) => {
      if (ctx.withheld) return HIDDEN;
      const f = focusOf(a, ctx, "read");
      const t = atOf(a, ctx, "read") - 1;
      const b = blockOf(a, t, f);
      return (
        `Each query keeps three running numbers: m, its largest score so far; l, the sum of e^(s − m); o, the sum ` +
        `of e^(s − m) × v. After block ${t + 1}, ${quote(a.tokens[f])} has m = ${num(b.m)}, l = ${num(b.l)} and ` +
        `o = ${vec(b.o)}: the lines under the table work them out.`
      );
    },
  },
  {
    id: "rescale",
    title: "A bigger score: rescale what was kept",
    short: "rescale",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-arith]",
    // the class's question at this step (Ask the class): app/classroom/questions.py tiles_rescale, "by what
    // number are the l and o kept so far multiplied?" (a range; the server computes α = e^(m_old − m))
    ask: {
      q: "A bigger score arrives: what happens to the o kept so far?",
      options: ["thrown away", "× e^(m_old − m), less than 1", "nothing"],
      answer: 1,
      why: (a, ctx) => {
        const f = focusOf(a, ctx, "rescale");
        const t = atOf(a, ctx, "rescale") - 1;
        const b = blockOf(a, t, f);
        const grew = t > 0 && b.alpha < 1;
        return (
          "It was added up measured from the old m; the new m is larger, so l and o are multiplied by " +
          `α = e^(m_old − m) before the block's own terms are added` +
          (grew ? `: here ${exp(b.mOld, b.m)} = ${num(b.alpha)}. ` : ". ") +
          "A smaller score never changes m (α = 1). Nothing is thrown away or read twice."
        );
      },
    },
    text: (a, ctx) => {
      if (ctx.withheld) return HIDDEN;
      const f = focusOf(a, ctx, "rescale");
      const t = atOf(a, ctx, "rescale") - 1;
      const b = blockOf(a, t, f);
      if (t === 0 || !(b.m > b.mOld)) {
        const jump = biggestJump(a);
        return (
          `For ${quote(a.tokens[f])} block ${t + 1} brings no score bigger than m = ${num(b.m)}, so α = 1 and l and o ` +
          `only grow. ` + (jump ? `Pick the query ${quote(a.tokens[jump.row])} (block ${jump.block + 1}) to see m grow.` : `With b = ${a.block} no query's m grows after its first block: try a smaller b.`)
        );
      }
      return (
        `Block ${t + 1} brings ${quote(a.tokens[b.s.start + b.scores.indexOf(b.top)])} to ${quote(a.tokens[f])} with the score ` +
        `${num(b.top)}, bigger than every score it has read (m = ${num(b.mOld)}). Its l = ${num(b.lOld)} and ` +
        `o = ${vec(b.oOld)} were added up measured from that old m. What must happen to them now?`
      );
    },
  },
  {
    id: "finish",
    title: "Divide once: the same row, to the last digit",
    short: "finish",
    figure: "#chapter-stage, [data-testid=tiles-finish]",
    ask: {
      q: "Why is o / l the plain way's output?",
      options: ["the same terms, added in another order", "it is a close guess", "the model was trained for it"],
      answer: 0,
      why: (a) =>
        `o / l = Σ e^(s − m)·v / Σ e^(s − m) = Σ softmax(s)·v: the same terms, only added up block by block. Over ` +
        `every query the largest difference from the plain way is ${tiny(gap(a.output, a.plain.output))}, the size of ` +
        "the computer's rounding. It is exact, not an approximation.",
    },
    text: (a, ctx) => {
      if (ctx.withheld) return HIDDEN;
      const f = focusOf(a, ctx, "finish");
      const T = a.steps.length;
      const last = a.steps[T - 1];
      return (
        `After block ${T} every key has been read once. Divide once: o / l = ${vec(a.output[f])} for ${quote(a.tokens[f])}. ` +
        `And e^(s − m) / l with the final m = ${num(last.m[f])} and l = ${num(last.l[f])} gives back each weight: ` +
        `the table compares the finished row with the plain softmax row.`
      );
    },
  },
  {
    id: "memory",
    title: "What it saves",
    short: "memory",
    figure: "#chapter-stage, [data-testid=tiles-memory]",
    ask: {
      q: "Twice the tokens, the same b: how many more scores held at once?",
      options: ["twice as many", "four times as many", "the same"],
      answer: 0,
      why: (a) =>
        "n × b grows with n: twice the tokens, twice the scores. The plain table grows with n²: four times. For " +
        `4,096 tokens in blocks of 128: ${grouped(a.long.tile)} instead of ${grouped(a.long.table)} ` +
        `(${mib(a.long.tile * a.long.bytes_per_number)} instead of ${mib(a.long.table * a.long.bytes_per_number)} per ` +
        `head in float32), n / b = ${a.long.table / a.long.tile} times fewer.`,
    },
    text: (a) =>
      `Held at once: one block of scores (n × b = ${held(a)}) and each query's m, l and o ` +
      `(${a.held.tokens} × (2 + ${a.d_v}) = ${grouped(a.held.running)} numbers), never the ${grouped(a.held.table)} of the ` +
      `whole table. On a GPU a block fits the chip's small, fast memory, so this is also faster: it is FlashAttention ` +
      `(Dao et al., 2022), and today's models compute attention this way.`,
  },
];

// ---- the panel ---------------------------------------------------------------------------------

/** The table of scores: the whole table (step table), else only the block being read, each query's
 *  numbers beside it; `before`: the focused row shows m, l, o before the block (the rescale step's
 *  question is not answered yet). */
function scoresTable(a, stepId, f, t, { before = false, withheld = false } = {}) {
  const n = a.tokens.length;
  const [r0, r1] = n > ROWS_SHOWN ? around(n, f, ROWS_SHOWN) : [0, n];
  const table = el("table", { className: "tl-table", dataset: { testid: "tiles-table" } });
  const whole = stepId === "table";
  const s = whole ? null : a.steps[t];
  // the whole table (around the focused query on a long sentence); else every key of a short input, the
  // cells outside the block grey; else only the block's keys
  const [c0, c1] = whole || n > COLS_SHOWN ? (whole ? around(n, f, COLS_SHOWN) : [s.start, Math.min(s.stop, s.start + COLS_SHOWN)]) : [0, n];
  const rowsPart = r1 - r0 < n ? `queries ${r0 + 1}–${r1}` : "";
  const colsPart = whole && c1 - c0 < n ? `keys ${c0 + 1}–${c1}` : "";
  const part = rowsPart || colsPart ? ` (${[rowsPart, colsPart].filter(Boolean).join(", ")} of ${n})` : "";
  const inBlock = s ? n * (s.stop - s.start) : 0;
  const caption = whole
    ? `Every score q·k/√d_k at once: ${n} × ${n} = ${grouped(n * n)}${part}`
    : `Block ${t + 1} of ${a.steps.length}: its ${grouped(inBlock)} scores exist now, ` +
      (c1 - c0 === n ? "grey cells never" : `the other ${grouped(n * n - inBlock)} never${part}`);
  table.append(el("caption", {}, caption));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, "query"));
  for (let c = c0; c < c1; c++) head.append(el("th", { scope: "col", className: "tl-key" }, a.tokens[c]));
  if (!whole && !withheld) for (const name of ["m", "l", "o"]) head.append(el("th", { scope: "col", className: "tl-run" }, name));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  for (let i = r0; i < r1; i++) {
    const tr = el("tr", i === f ? { className: "tl-hot" } : {});
    tr.append(el("th", { scope: "row" }, a.tokens[i]));
    for (let c = c0; c < c1; c++) {
      if (!whole && (c < s.start || c >= s.stop)) {
        tr.append(el("td", { className: "tl-never", title: "never exists" }, ""));
        continue;
      }
      const score = whole ? wholeScore(a, i, c) : s.scores[i][c - s.start];
      tr.append(el("td", { dataset: { testid: `tiles-s-${i}-${c}` }, className: score === null ? "tl-hidden" : "" }, num(score)));
    }
    if (!whole && !withheld) {
      const wait = before && i === f; // the question asks what happens to them: not yet
      tr.append(
        el("td", { className: "tl-run", dataset: { testid: `tiles-m-${i}` } }, num(s.m[i])),
        el("td", { className: "tl-run", dataset: { testid: `tiles-l-${i}` } }, wait ? "?" : num(s.l[i])),
        el("td", { className: "tl-run tl-vec", dataset: { testid: `tiles-o-${i}` } }, wait ? "?" : vec(s.o[i], a.d_v <= 2 ? 2 : 1)),
      );
    }
    body.append(tr);
  }
  table.append(body);
  return scrollBox(table);
}

/** A score of the whole table, from the block that holds it. */
function wholeScore(a, i, c) {
  const s = a.steps.find((x) => c >= x.start && c < x.stop);
  return s.scores[i][c - s.start];
}

/** The focused query's arithmetic for one block, line by line; `hide`: only the new m (before the reveal). */
function arithmetic(a, f, t, hide) {
  const b = blockOf(a, t, f);
  const box = el("div", { className: "tl-arith", dataset: { testid: "tiles-arith" } });
  const line = (testid, text) => box.append(el("p", { dataset: { testid } }, text));
  const shown = b.scores.slice(0, TERMS + 1).map((x) => (x === null ? "hidden" : num(x)));
  const scores = shown.join(", ") + (b.scores.length > shown.length ? ", …" : "");
  line("tiles-arith-block", `${quote(a.tokens[f])}, block ${t + 1} (${ends(a, b.s)}): s = ${scores}`);
  if (!b.seen) {
    line("tiles-arith-m", `every key of this block comes after ${quote(a.tokens[f])}: the causal mask hides it, so nothing changes (α = 1)`);
    return box;
  }
  line("tiles-arith-m", `m = max(m_old, ${num(b.top)}) = max(${num(b.mOld)}, ${num(b.top)}) = ${num(b.m)}`);
  if (hide) {
    line("tiles-arith-wait", "α, l and o: answer the question above first.");
    return box;
  }
  const terms = (list) => {
    const shown = list.slice(0, TERMS);
    return `${shown.join(" + ")}${list.length > TERMS ? " + …" : ""}`;
  };
  const ps = b.p.map((x, j) => [x, j]).filter(([, j]) => b.scores[j] !== null);
  line("tiles-arith-alpha", `α = e^(m_old − m) = ${exp(b.mOld, b.m)} = ${num(b.alpha)}`);
  line("tiles-arith-l", `l = α·l_old + Σ e^(s − m) = ${num(b.alpha)} × ${num(b.lOld)} + (${terms(ps.map(([x]) => num(x)))}) = ${num(b.l)}`);
  // each value written out when it is short (the lesson's 2 numbers), else named by its word
  const v = (j) => (a.d_v <= 2 ? vec(a.v[b.s.start + j]) : `v(${a.tokens[b.s.start + j]})`);
  line("tiles-arith-o", `o = α·o_old + Σ e^(s − m)·v = ${num(b.alpha)} × ${vec(b.oOld, 2)} + ${terms(ps.map(([x, j]) => `${num(x)} × ${v(j)}`))} = ${vec(b.o, 2)}`);
  return box;
}

/** The finished row of the focused query beside the plain softmax row, and the outputs. */
function finishTable(a, f) {
  const n = a.tokens.length;
  const [c0, c1] = n > COLS_SHOWN ? around(n, f, COLS_SHOWN) : [0, n];
  const table = el("table", { className: "tl-table", dataset: { testid: "tiles-finish" } });
  const part = c1 - c0 < n ? ` (keys ${c0 + 1}–${c1} of ${n})` : "";
  table.append(el("caption", {}, `${quote(a.tokens[f])}: e^(s − m) / l after the blocks, and plain softmax${part}`));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, ""));
  for (let c = c0; c < c1; c++) head.append(el("th", { scope: "col", className: "tl-key" }, a.tokens[c]));
  head.append(el("th", { scope: "col", className: "tl-run" }, "output"));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  for (const [name, w, out, id] of [
    ["blocks", a.weights[f], a.output[f], "tiles"],
    ["plain", a.plain.weights[f], a.plain.output[f], "plain"],
  ]) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, name));
    for (let c = c0; c < c1; c++) tr.append(el("td", { dataset: { testid: `tiles-${id}-w-${c}` } }, num(w[c])));
    tr.append(el("td", { className: "tl-run tl-vec", dataset: { testid: `tiles-${id}-out` } }, vec(out)));
    body.append(tr);
  }
  table.append(body);
  const box = el("div", { className: "tl-finish" });
  const proof = `largest difference over every query: output ${tiny(gap(a.output, a.plain.output))}, weights ${tiny(gap(a.weights, a.plain.weights))}`;
  box.append(scrollBox(table), el("p", { className: "tl-proof", dataset: { testid: "tiles-gap" } }, proof));
  return box;
}

/** Numbers held at once: this input and a 4,096-token prompt. */
function memoryTable(a, source) {
  const table = el("table", { className: "tl-table tl-memory", dataset: { testid: "tiles-memory" } });
  table.append(el("caption", {}, "Numbers held at once, one head"));
  const head = el("tr");
  for (const h of ["", source, "4,096 tokens, float32"]) head.append(el("th", { scope: "col" }, h));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  const bytes = (x, h) => (h.bytes_per_number === 4 ? ` (${mib(x * 4)})` : "");
  for (const [name, value, id] of [
    ["n, b", (h) => `${grouped(h.tokens)}, ${grouped(h.block)}`, "nb"],
    ["scores: n × b", (h) => grouped(h.tile) + bytes(h.tile, h), "tile"],
    ["plain: n × n", (h) => grouped(h.table) + bytes(h.table, h), "table"],
    ["m, l and o", (h) => grouped(h.running) + bytes(h.running, h), "running"],
  ]) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, name));
    tr.append(el("td", { dataset: { testid: `tiles-here-${id}` } }, value(a.held)));
    tr.append(el("td", { dataset: { testid: `tiles-long-${id}` } }, value(a.long)));
    body.append(tr);
  }
  table.append(body);
  return scrollBox(table);
}

/** Block sizes to offer: 1, 2, 4, … up to n, and the one in use. */
function blockChoices(n, b) {
  const out = [];
  for (let x = 1; x <= n; x *= 2) out.push(x);
  if (!out.includes(n)) out.push(n);
  if (!out.includes(b)) out.push(b);
  return out.sort((x, y) => x - y);
}

class TilesView {
  constructor(ctx) {
    this.ctx = ctx;
    this.ask = el("div", { className: "wr-ask", dataset: { testid: "tiles-ask" } });
    this.nav = el("div", { className: "tl-nav", dataset: { testid: "tiles-nav" } });
    this.figure = el("div", { className: "tl-figure" });
    this.held = el("p", { className: "tl-held", dataset: { testid: "tiles-held" } });
    this.controls = el("div", { className: "chapter-controls tl-controls" });
    this.source = el("div", { className: "chapter-controls tl-source" });
    ctx.panel.append(this.ask, this.nav, this.figure, this.held, this.controls, this.source);
    this.grid = ctx.stage ? new TileGrid(ctx.stage) : null;
    this.looked = "";
    this.asked = null; // the step whose question is on screen
    this.revealed = false; // the question of that step has been answered
  }

  update(a, stepId) {
    this.answer = a;
    const step = STEPS.find((s) => s.id === stepId);
    if (stepId !== this.asked) {
      this.asked = stepId;
      this.revealed = false;
      predictBox(this.ask, step.ask, {
        testid: "tiles-ask",
        answer: () => this.answer,
        ctx: this.ctx,
        answered: () => {
          this.revealed = true;
          this.update(this.answer, this.asked);
        },
      });
    }
    const ctx = this.ctx;
    const withheld = Boolean(ctx.withheld);
    const f = focusOf(a, ctx, stepId);
    const at = atOf(a, ctx, stepId);
    const t = at - 1;
    const hide = stepId === "rescale" && !this.revealed;
    this.drawNav(a, stepId, at);
    const parts = [];
    if (stepId === "finish") parts.push(withheld ? el("p", {}, HIDDEN) : finishTable(a, f));
    else if (stepId === "memory") parts.push(memoryTable(a, a.source === "sentence" ? `this sentence (${a.tokens.length} tokens)` : "this example"));
    else parts.push(scoresTable(a, stepId, f, t, { before: hide, withheld }));
    if ((stepId === "read" || stepId === "rescale") && !withheld) parts.push(arithmetic(a, f, t, hide));
    this.figure.replaceChildren(...parts);
    this.held.hidden = stepId === "table";
    this.held.textContent =
      `Held at once: ${held(a)} scores and ${grouped(a.held.running)} running numbers (m, l, o); ` +
      `the plain way: ${a.held.tokens} × ${a.held.tokens} = ${grouped(a.held.table)} scores.`;
    this.drawControls(a, f);
    if (this.grid) this.drawScene(a, stepId, f, stepId === "table" ? null : t, { hide, withheld });
  }

  drawNav(a, stepId, at) {
    const T = a.steps.length;
    this.nav.hidden = stepId === "table" || stepId === "finish";
    if (this.nav.hidden) return;
    const s = a.steps[at - 1];
    const go = (k) => this.ctx.setParams({ at: `${stepId}:${k}` });
    const prev = el("button", { type: "button", dataset: { testid: "tiles-prev" }, "aria-label": "The block before" }, "← block");
    const next = el("button", { type: "button", dataset: { testid: "tiles-next" }, "aria-label": "The next block" }, "block →");
    prev.disabled = at <= 1;
    next.disabled = at >= T;
    prev.addEventListener("click", () => go(at - 1));
    next.addEventListener("click", () => go(at + 1));
    const where = el("span", { className: "tl-at", dataset: { testid: "tiles-at" } }, `block ${at} of ${T}: ${ends(a, s)}`);
    this.nav.replaceChildren(prev, where, next);
  }

  drawControls(a, f) {
    const ctx = this.ctx;
    const n = a.tokens.length;
    this.controls.replaceChildren(
      picker("b", blockChoices(n, a.block).map((x) => [x, String(x)]), a.block, (v) => ctx.setParams({ block: v, at: "" }), "tiles-block"),
      picker("query", a.tokens.map((w, i) => [i, w]), f, (v) => ctx.setParams({ word: v }), "tiles-word"),
      picker("mask", [["full", "full"], ["causal", "causal"]], a.mask, (v) => ctx.setParams({ mask: v, at: "" }), "tiles-mask"),
    );
    const parts = [
      el("span", { className: "tl-source-label" }, "A sentence through all-MiniLM-L6-v2:"),
      sentenceBox(ctx.params.text || ANIMAL, (s) => ctx.setParams({ text: s, word: "", at: "", block: "4" }), "tiles-sentence"),
    ];
    if (a.source === "sentence") {
      const back = el("button", { type: "button", dataset: { testid: "tiles-example" } }, "the cat ate its fish");
      back.addEventListener("click", () => ctx.setParams({ text: "", word: "", at: "", block: "2" }));
      parts.push(
        back,
        picker("layer", Array.from({ length: 6 }, (_, i) => [i, String(i)]), a.layer, (v) => ctx.setParams({ layer: v }), "tiles-layer"),
        picker("head", Array.from({ length: 12 }, (_, i) => [i, String(i)]), a.head, (v) => ctx.setParams({ head: v }), "tiles-head"),
      );
    }
    this.source.replaceChildren(...parts);
  }

  /** The 3D view: block t being read (null: the plain table) and the focused query's running numbers
   *  (`hide`: not before the question is answered); nothing of the weights while they are withheld. */
  drawScene(a, stepId, f, t, { hide, withheld }) {
    const n = a.tokens.length;
    const T = a.steps.length;
    const finish = stepId === "finish";
    const s = t === null ? null : a.steps[t];
    const bars = a.tokens.map((_, i) =>
      a.tokens.map((_, c) => {
        if (withheld || finish) return null;
        if (!s) return a.weights[i][c]; // the plain table: every weight at once
        return c >= s.start && c < s.stop ? s.p[i][c - s.start] : null; // e^(s − m): only the block's
      }),
    );
    const b = s && !finish ? blockOf(a, t, f) : null;
    const running = hide || withheld || !b ? null : [a.tokens[f], `m ${num(b.m)}`, `l ${num(b.l)}`, `o ${vec(b.o)}`];
    const inBlock = s ? grouped(n * (s.stop - s.start)) : "";
    const note = !s
      ? `the whole table: ${grouped(n * n)} scores at once`
      : finish
        ? `every block read, then dropped: o / l is the plain way's output`
        : stepId === "memory"
          ? `held now: ${inBlock} scores, not ${grouped(n * n)}`
          : `only the ${inBlock} scores of this block exist`;
    const view = {
      rows: a.tokens,
      cols: a.tokens,
      blocks: s || finish ? a.steps.map((x) => [x.start, x.stop]) : [[0, n]], // the plain table: no blocks
      current: finish ? null : t,
      read: finish ? T : 0,
      bars,
      focus: f,
      running,
      note,
      compare: finish && !withheld ? { left: a.weights[f], right: a.plain.weights[f], legend: `${a.tokens[f]}: blocks | plain` } : null,
    };
    const c = this.ctx.stage.container;
    const aspect = c.clientWidth / Math.max(1, c.clientHeight);
    const key = `${n}:${aspect < 1.25}`;
    if (this.looked !== key) {
      // the direction (from the front, well above); the grid then fits the view (TileGrid.show)
      const d = Math.max(6, n * 0.9) / Math.min(1, aspect / 1.3);
      this.ctx.stage.look([0, d * 0.8, d * 0.75], [0, 0, 0.3]);
      this.looked = key;
    }
    this.grid.show(view);
  }

  dispose() {
    this.grid?.dispose();
  }
}

// ---- the NumPy panel --------------------------------------------------------------------------

function code(a, stepId, ctx) {
  if (ctx.withheld) return "# The weights are hidden for now.";
  const f = focusOf(a, ctx, stepId);
  const source =
    a.source === "sentence"
      ? `# ${a.model}, layer ${a.layer}, head ${a.head}: the head's own q, k, v (from the server)`
      : "# the lesson's hand-picked vectors";
  return [
    "import json",
    "import numpy as np",
    "",
    source,
    `words = ${pyStrings(a.tokens)}`,
    `Q = ${pyMatrix(a.q)}`,
    `K = ${pyMatrix(a.k)}`,
    `V = ${pyMatrix(a.v)}`,
    `b = ${a.block}  # keys per block`,
    `causal = ${a.mask === "causal" ? "True" : "False"}`,
    "n, d_k = Q.shape",
    "",
    "m = np.full(n, -np.inf)  # per query: the largest score so far",
    "l = np.zeros(n)  # the sum of e^(s - m) so far",
    "o = np.zeros((n, V.shape[1]))  # the sum of e^(s - m) * v so far",
    "steps = []",
    "for start in range(0, n, b):  # one block of keys at a time: only n x b scores exist",
    "    keys = np.arange(start, min(start + b, n))",
    "    s = Q @ K[keys].T / np.sqrt(d_k)  # (n, b)",
    "    if causal:",
    "        s[keys[None, :] > np.arange(n)[:, None]] = -np.inf  # keys after the query",
    "    m_new = np.maximum(m, s.max(axis=1))",
    "    alpha = np.exp(m - m_new)  # what everything kept so far is worth now",
    "    p = np.exp(s - m_new[:, None])",
    "    l = alpha * l + p.sum(axis=1)",
    "    o = alpha[:, None] * o + p @ V[keys]",
    "    m = m_new",
    "    steps.append({'m': m.tolist(), 'l': l.tolist()})",
    "tiled = o / l[:, None]",
    "",
    "# the plain way, with the whole n x n table, to compare",
    "S = Q @ K.T / np.sqrt(d_k)",
    "if causal:",
    "    S[np.triu_indices(n, k=1)] = -np.inf",
    "W = np.exp(S - S.max(axis=1, keepdims=True))",
    "W /= W.sum(axis=1, keepdims=True)",
    `i = ${f}  # ${pyStr(a.tokens[f])}`,
    "print(json.dumps({'output': tiled.tolist(), 'steps': steps, 'row': tiled[i].tolist(),",
    "                  'largest_difference': float(np.abs(tiled - W @ V).max())}))",
  ].join("\n");
}

function numbers(a, stepId, ctx) {
  const items = [
    { label: "b, keys per block", value: String(a.block), testid: "tiles-b" },
    { label: "scores at once: n × b", value: grouped(a.held.tile), testid: "tiles-tile" },
    { label: "the plain table: n × n", value: grouped(a.held.table), testid: "tiles-table-cells" },
  ];
  if (ctx.withheld) return items;
  const f = focusOf(a, ctx, stepId);
  if (stepId === "read" || stepId === "rescale") {
    const t = atOf(a, ctx, stepId) - 1;
    items.push({ label: `m of ${quote(a.tokens[f])}`, value: num(a.steps[t].m[f]), testid: "tiles-m" });
  }
  if (stepId === "finish") items.push({ label: "largest |blocks − plain|", value: tiny(gap(a.output, a.plain.output)), testid: "tiles-gap-number" });
  return items;
}

export default {
  id: "tiles",
  title: "Attention without the n×n table",
  summary: "Keys in blocks, a running max m, sum l and output o: the same attention, holding n × b scores instead of n × n.",
  // text: a sentence for the model, "" for the lesson's example (not `sentence`: a room's view may not
  // carry an empty one, and the attention view's sentence is its own)
  params: { text: "", block: "2", mask: "full", word: "", at: "", layer: "3", head: "1" },
  steps: STEPS,

  async load(ctx) {
    const p = ctx.params;
    const block = Math.max(1, Math.round(Number(p.block)) || 2); // past n: the server's 422 names it
    const mask = p.mask === "causal" ? "causal" : "full";
    const model = { layer: Number(p.layer) || 0, head: Number(p.head) || 0 };
    const body = p.text ? { sentence: p.text, ...model, block, mask } : { example: EXAMPLE, block, mask };
    const key = JSON.stringify(body);
    if (answers.has(key)) return answers.get(key);
    const tiles = await ctx.post("/api/lesson/tiles", body);
    // the plain way on the same input: the same sentence's head, or the same numbers sent by hand
    const plain = await ctx.post(
      "/api/attention",
      p.text ? { sentence: p.text, ...model, mask } : { tokens: tiles.tokens, q: tiles.q, k: tiles.k, v: tiles.v, mask },
    );
    const answer = { ...tiles, plain: { output: plain.output, weights: plain.weights } };
    answers.set(key, answer);
    if (answers.size > CACHED) answers.delete(answers.keys().next().value);
    return answer;
  },

  mount(ctx) {
    return new TilesView(ctx);
  },

  numbers,
  code,
};
