// Chapter `tiles`: attention without the n × n table. The keys (and their values) are read in blocks
// of b; each query keeps three running numbers, the largest score m, the sum l of e^(s − m) and the sum
// o of e^(s − m)·v, and multiplies l and o by e^(m_old − m_new) when a bigger score arrives (Milakov &
// Gimelshein 2018; FlashAttention, Dao et al. 2022). After the last block o / l is attention's output,
// to the last digits. On the lesson's example (hand-set q, k, v) or a typed sentence through
// all-MiniLM-L6-v2. Every number comes from the server: POST /api/lesson/tiles, and POST /api/attention
// for the plain way beside it.
//
// Its words are in the catalogs (keys "chapter.tiles.…", chapters/CONTRACT.md "Words in every
// language"); the lesson's example is shown in the page's language where it carries it word for word
// (`a.words`; `a.tokens` stays the model's, for what the chapter looks up), its numbers the same.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { decimal, integer, language, listOf, locale, t } from "../i18n.js";
import { pyMatrix, pyStr, pyStrings } from "../pycode.js";
import { TileGrid } from "../scene/tilegrid.js";
import { ANIMAL, EXAMPLE, exampleNote, exampleWords, numberList, picker, predictBox, quote, scrollBox, sentenceBox } from "./widgets.js";

/** This chapter's message `key` (chapter.tiles.<key>) with `values`. */
const say = (key, values) => t(`chapter.tiles.${key}`, values);

const ROWS_SHOWN = 5; // a longer sentence's table shows this many queries, around the focused one
const COLS_SHOWN = 8; // … and this many keys of the whole table (the table step)
const TERMS = 3; // a sum written out term by term shows this many terms, then "+ …"
const CACHED = 8; // answers kept: moving the block along changes only what is shown, not the answer
const answers = new Map(); // request (JSON) → answer, the newest last

const MINUS = "\u2212";
/** x in e-notation with one decimal ("1.1e−16"; the mantissa in the language's form: "1,1e−16"). */
function eNotation(x) {
  const [mantissa, power] = x.toExponential(1).split("e");
  const m = language() === "en" ? mantissa : decimal(Number(mantissa), 1);
  return `${m}e${power.replace("+", "")}`.replace(/-/g, MINUS);
}
/** 3 decimals; a small number that is not 0 in e-notation (α can be 1e−5); null (−∞) as −∞. */
function num(x) {
  if (x === null || x === undefined) return `${MINUS}∞`;
  if (x !== 0 && Math.abs(x) < 0.0005) return eNotation(x);
  return fixed3(x);
}
/** A vector, its first `count` numbers (a real head's has 32). */
const vec = (row, count = 3) => numberList([...row.slice(0, count).map(num), ...(row.length > count ? ["…"] : [])], "[", "]");
/** A whole number, its thousands grouped as the language groups them (4,096). */
const grouped = (n) => new Intl.NumberFormat(locale()).format(n);
const mib = (bytes) => `${new Intl.NumberFormat(locale(), { maximumFractionDigits: 2 }).format(bytes / 2 ** 20)} MiB`;
const words = (a, s) => listOf(a.words.slice(s.start, s.stop).map(quote));
/** A block's keys, the first and the last of a long one. */
const ends = (a, s) => (s.stop - s.start > 3 ? `${quote(a.words[s.start])} … ${quote(a.words[s.stop - 1])}` : words(a, s));

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
const tiny = (x) => (x === 0 ? "0" : eNotation(x));

/** [first, last): at most `count` of 0 … n − 1, around `focus`. */
function around(n, focus, count) {
  const first = Math.max(0, Math.min(n - count, focus - Math.floor(count / 2)));
  return [first, Math.min(n, first + count)];
}

// ---- the steps ---------------------------------------------------------------------------------

const held = (a) => `${integer(a.held.tokens)} × ${integer(a.held.block)} = ${grouped(a.held.tile)}`;
const hidden = () => say("hidden");
/** The long prompt the questions ask about: 4,096 tokens in blocks of 128. */
const LONG = { tokens: 4096, block: 128 };

/** A step's getters for its title and short name, and its Predict question's (read when drawn). */
const step = ({ id, options, answer, why, ...rest }) => ({
  id,
  get title() {
    return say(`${id}.title`);
  },
  get short() {
    return say(`${id}.short`);
  },
  ask: {
    get q() {
      return say(`${id}.ask`, { n: grouped(LONG.tokens) });
    },
    get options() {
      return options ? options() : [0, 1, 2].map((i) => say(`${id}.option.${i}`));
    },
    answer,
    why,
  },
  ...rest,
});

const STEPS = [
  step({
    id: "table",
    figure: "#chapter-stage, [data-testid=tiles-table]",
    options: () => [grouped(LONG.tokens), say("table.option.1"), integer(LONG.block)],
    answer: 1,
    why: (a) => say("table.why", { n: grouped(LONG.tokens), table: grouped(a.long.table), mib: mib(a.long.table * a.long.bytes_per_number) }),
    text: (a) => {
      const n = integer(a.tokens.length);
      const note = a.source === "sentence" ? "" : exampleNote(EXAMPLE); // where the example's words stay English
      return say("table.text", { n, cells: grouped(a.held.table) }) + (note ? ` ${note}` : "");
    },
  }),
  step({
    id: "blocks",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-nav]",
    answer: 1,
    why: (a) => say("blocks.why", { held: held(a) }),
    text: (a) => {
      const T = a.steps.length;
      const last = a.steps[T - 1];
      return say("blocks.text", {
        b: integer(a.block),
        blocks: a.steps.map((s) => `[${words(a, s)}]`).join(" "),
        cut: String(last.stop - last.start < a.block),
        n: integer(a.tokens.length),
      });
    },
  }),
  step({
    id: "read",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-arith]",
    answer: 0,
    why: (a, ctx) => {
      const f = focusOf(a, ctx, "read");
      return say("read.why", { m: num(a.steps[0].m[f]), word: a.words[f] });
    },
    text: (a, ctx) => {
      if (ctx.withheld) return hidden();
      const f = focusOf(a, ctx, "read");
      const t = atOf(a, ctx, "read") - 1;
      const b = blockOf(a, t, f);
      return say("read.text", { block: integer(t + 1), word: a.words[f], m: num(b.m), l: num(b.l), o: vec(b.o) });
    },
  }),
  step({
    id: "rescale",
    figure: "#chapter-stage, [data-testid=tiles-table], [data-testid=tiles-arith]",
    // the class's question at this step (Ask the class): app/classroom/questions.py tiles_rescale, "by what
    // number are the l and o kept so far multiplied?" (a range; the server computes α = e^(m_old − m))
    answer: 1,
    why: (a, ctx) => {
      const f = focusOf(a, ctx, "rescale");
      const t = atOf(a, ctx, "rescale") - 1;
      const b = blockOf(a, t, f);
      const grew = t > 0 && b.alpha < 1;
      return say("rescale.why", { grew: String(grew), exp: grew ? exp(b.mOld, b.m) : "", alpha: num(b.alpha) });
    },
    text: (a, ctx) => {
      if (ctx.withheld) return hidden();
      const f = focusOf(a, ctx, "rescale");
      const t = atOf(a, ctx, "rescale") - 1;
      const b = blockOf(a, t, f);
      if (t === 0 || !(b.m > b.mOld)) {
        const jump = biggestJump(a);
        return say("rescale.none", {
          word: a.words[f],
          block: integer(t + 1),
          m: num(b.m),
          jump: String(Boolean(jump)),
          query: jump ? a.words[jump.row] : "",
          at: jump ? integer(jump.block + 1) : "",
          b: integer(a.block),
        });
      }
      return say("rescale.text", {
        block: integer(t + 1),
        key: a.words[b.s.start + b.scores.indexOf(b.top)],
        word: a.words[f],
        top: num(b.top),
        old: num(b.mOld),
        l: num(b.lOld),
        o: vec(b.oOld),
      });
    },
  }),
  step({
    id: "finish",
    figure: "#chapter-stage, [data-testid=tiles-finish]",
    answer: 0,
    why: (a) => say("finish.why", { gap: tiny(gap(a.output, a.plain.output)) }),
    text: (a, ctx) => {
      if (ctx.withheld) return hidden();
      const f = focusOf(a, ctx, "finish");
      const T = a.steps.length;
      const last = a.steps[T - 1];
      return say("finish.text", { last: integer(T), out: vec(a.output[f]), word: a.words[f], m: num(last.m[f]), l: num(last.l[f]) });
    },
  }),
  step({
    id: "memory",
    figure: "#chapter-stage, [data-testid=tiles-memory]",
    answer: 0,
    why: (a) =>
      say("memory.why", {
        n: grouped(LONG.tokens),
        b: integer(LONG.block),
        tile: grouped(a.long.tile),
        table: grouped(a.long.table),
        tileMib: mib(a.long.tile * a.long.bytes_per_number),
        tableMib: mib(a.long.table * a.long.bytes_per_number),
        ratio: integer(a.long.table / a.long.tile),
      }),
    text: (a) =>
      say("memory.text", {
        held: held(a),
        tokens: integer(a.held.tokens),
        dv: integer(a.d_v),
        running: grouped(a.held.running),
        table: grouped(a.held.table),
      }),
  }),
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
  const rowsPart = r1 - r0 < n ? say("part.rows", { from: integer(r0 + 1), to: integer(r1) }) : "";
  const colsPart = whole && c1 - c0 < n ? say("part.cols", { from: integer(c0 + 1), to: integer(c1) }) : "";
  const part = rowsPart || colsPart ? say("part.of", { parts: listOf([rowsPart, colsPart].filter(Boolean)), n: integer(n) }) : "";
  const inBlock = s ? n * (s.stop - s.start) : 0;
  const caption = whole
    ? say("caption.whole", { n: integer(n), cells: grouped(n * n), part })
    : say("caption.block", {
        block: integer(t + 1),
        count: integer(a.steps.length),
        now: grouped(inBlock),
        grey: String(c1 - c0 === n),
        rest: grouped(n * n - inBlock),
        part,
      });
  table.append(el("caption", {}, caption));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, say("query")));
  for (let c = c0; c < c1; c++) head.append(el("th", { scope: "col", className: "tl-key" }, a.words[c]));
  if (!whole && !withheld) for (const name of ["m", "l", "o"]) head.append(el("th", { scope: "col", className: "tl-run" }, name));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  for (let i = r0; i < r1; i++) {
    const tr = el("tr", i === f ? { className: "tl-hot" } : {});
    tr.append(el("th", { scope: "row" }, a.words[i]));
    for (let c = c0; c < c1; c++) {
      if (!whole && (c < s.start || c >= s.stop)) {
        tr.append(el("td", { className: "tl-never", title: say("never") }, ""));
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
  const shown = b.scores.slice(0, TERMS + 1).map((x) => (x === null ? say("arith.hidden") : num(x)));
  const scores = numberList([...shown, ...(b.scores.length > shown.length ? ["…"] : [])]);
  line("tiles-arith-block", say("arith.block", { word: a.words[f], block: integer(t + 1), keys: ends(a, b.s), scores }));
  if (!b.seen) {
    line("tiles-arith-m", say("arith.masked", { word: a.words[f] }));
    return box;
  }
  line("tiles-arith-m", `m = max(m_old, ${num(b.top)}) = max(${num(b.mOld)}, ${num(b.top)}) = ${num(b.m)}`);
  if (hide) {
    line("tiles-arith-wait", say("arith.wait"));
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
  const v = (j) => (a.d_v <= 2 ? vec(a.v[b.s.start + j]) : `v(${a.words[b.s.start + j]})`);
  line("tiles-arith-o", `o = α·o_old + Σ e^(s − m)·v = ${num(b.alpha)} × ${vec(b.oOld, 2)} + ${terms(ps.map(([x, j]) => `${num(x)} × ${v(j)}`))} = ${vec(b.o, 2)}`);
  return box;
}

/** The finished row of the focused query beside the plain softmax row, and the outputs. */
function finishTable(a, f) {
  const n = a.tokens.length;
  const [c0, c1] = n > COLS_SHOWN ? around(n, f, COLS_SHOWN) : [0, n];
  const table = el("table", { className: "tl-table", dataset: { testid: "tiles-finish" } });
  const part = c1 - c0 < n ? say("part.of", { parts: say("part.cols", { from: integer(c0 + 1), to: integer(c1) }), n: integer(n) }) : "";
  table.append(el("caption", {}, say("caption.finish", { word: a.words[f], part })));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, ""));
  for (let c = c0; c < c1; c++) head.append(el("th", { scope: "col", className: "tl-key" }, a.words[c]));
  head.append(el("th", { scope: "col", className: "tl-run" }, say("output")));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  for (const [name, w, out, id] of [
    [say("row.blocks"), a.weights[f], a.output[f], "tiles"],
    [say("row.plain"), a.plain.weights[f], a.plain.output[f], "plain"],
  ]) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, name));
    for (let c = c0; c < c1; c++) tr.append(el("td", { dataset: { testid: `tiles-${id}-w-${c}` } }, num(w[c])));
    tr.append(el("td", { className: "tl-run tl-vec", dataset: { testid: `tiles-${id}-out` } }, vec(out)));
    body.append(tr);
  }
  table.append(body);
  const box = el("div", { className: "tl-finish" });
  const proof = say("proof", { output: tiny(gap(a.output, a.plain.output)), weights: tiny(gap(a.weights, a.plain.weights)) });
  box.append(scrollBox(table), el("p", { className: "tl-proof", dataset: { testid: "tiles-gap" } }, proof));
  return box;
}

/** Numbers held at once: this input and a 4,096-token prompt. */
function memoryTable(a, source) {
  const table = el("table", { className: "tl-table tl-memory", dataset: { testid: "tiles-memory" } });
  table.append(el("caption", {}, say("caption.memory")));
  const head = el("tr");
  for (const h of ["", source, say("memory.long", { n: grouped(LONG.tokens) })]) head.append(el("th", { scope: "col" }, h));
  table.append(el("thead"));
  table.lastElementChild.append(head);
  const body = el("tbody");
  const bytes = (x, h) => (h.bytes_per_number === 4 ? ` (${mib(x * 4)})` : "");
  for (const [name, value, id] of [
    ["n, b", (h) => numberList([grouped(h.tokens), grouped(h.block)]), "nb"],
    [say("memory.tile"), (h) => grouped(h.tile) + bytes(h.tile, h), "tile"],
    [say("memory.table"), (h) => grouped(h.table) + bytes(h.table, h), "table"],
    [say("memory.running"), (h) => grouped(h.running) + bytes(h.running, h), "running"],
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
    if (stepId === "finish") parts.push(withheld ? el("p", {}, hidden()) : finishTable(a, f));
    else if (stepId === "memory") parts.push(memoryTable(a, say("memory.source", { sentence: String(a.source === "sentence"), n: integer(a.tokens.length) })));
    else parts.push(scoresTable(a, stepId, f, t, { before: hide, withheld }));
    if ((stepId === "read" || stepId === "rescale") && !withheld) parts.push(arithmetic(a, f, t, hide));
    this.figure.replaceChildren(...parts);
    this.held.hidden = stepId === "table";
    this.held.textContent = say("held", { held: held(a), running: grouped(a.held.running), n: integer(a.held.tokens), table: grouped(a.held.table) });
    this.drawControls(a, f);
    if (this.grid) this.drawScene(a, stepId, f, stepId === "table" ? null : t, { hide, withheld });
  }

  drawNav(a, stepId, at) {
    const T = a.steps.length;
    this.nav.hidden = stepId === "table" || stepId === "finish";
    if (this.nav.hidden) return;
    const s = a.steps[at - 1];
    const go = (k) => this.ctx.setParams({ at: `${stepId}:${k}` });
    const prev = el("button", { type: "button", dataset: { testid: "tiles-prev" }, "aria-label": say("nav.before") }, say("nav.prev"));
    const next = el("button", { type: "button", dataset: { testid: "tiles-next" }, "aria-label": say("nav.after") }, say("nav.next"));
    prev.disabled = at <= 1;
    next.disabled = at >= T;
    prev.addEventListener("click", () => go(at - 1));
    next.addEventListener("click", () => go(at + 1));
    const where = el("span", { className: "tl-at", dataset: { testid: "tiles-at" } }, say("nav.at", { at: integer(at), count: integer(T), keys: ends(a, s) }));
    this.nav.replaceChildren(prev, where, next);
  }

  drawControls(a, f) {
    const ctx = this.ctx;
    const n = a.tokens.length;
    this.controls.replaceChildren(
      picker("b", blockChoices(n, a.block).map((x) => [x, integer(x)]), a.block, (v) => ctx.setParams({ block: v, at: "" }), "tiles-block"),
      picker(say("pick.query"), a.words.map((w, i) => [i, w]), f, (v) => ctx.setParams({ word: v }), "tiles-word"),
      picker(say("pick.mask"), ["full", "causal"].map((m) => [m, say("pick.maskName", { mask: m })]), a.mask, (v) => ctx.setParams({ mask: v, at: "" }), "tiles-mask"),
    );
    const parts = [
      el("span", { className: "tl-source-label" }, say("source", { model: "all-MiniLM-L6-v2" })),
      sentenceBox(ctx.params.text || ANIMAL, (s) => ctx.setParams({ text: s, word: "", at: "", block: "4" }), "tiles-sentence"),
    ];
    if (a.source === "sentence") {
      const back = el("button", { type: "button", dataset: { testid: "tiles-example" } }, t(`example.${EXAMPLE}.title`));
      back.addEventListener("click", () => ctx.setParams({ text: "", word: "", at: "", block: "2" }));
      parts.push(
        back,
        picker(say("pick.layer"), Array.from({ length: 6 }, (_, i) => [i, integer(i)]), a.layer, (v) => ctx.setParams({ layer: v }), "tiles-layer"),
        picker(say("pick.head"), Array.from({ length: 12 }, (_, i) => [i, integer(i)]), a.head, (v) => ctx.setParams({ head: v }), "tiles-head"),
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
    const running = hide || withheld || !b ? null : [a.words[f], `m ${num(b.m)}`, `l ${num(b.l)}`, `o ${vec(b.o)}`];
    const inBlock = s ? grouped(n * (s.stop - s.start)) : "";
    const cells = grouped(n * n);
    const note = !s
      ? say("scene.whole", { cells })
      : finish
        ? say("scene.finish")
        : stepId === "memory"
          ? say("scene.memory", { now: inBlock, cells })
          : say("scene.block", { now: inBlock });
    const view = {
      rows: a.words,
      cols: a.words,
      blocks: s || finish ? a.steps.map((x) => [x.start, x.stop]) : [[0, n]], // the plain table: no blocks
      current: finish ? null : t,
      read: finish ? T : 0,
      bars,
      focus: f,
      running,
      note,
      compare: finish && !withheld ? { left: a.weights[f], right: a.plain.weights[f], legend: say("scene.compare", { word: a.words[f] }) } : null,
      blockName: t === null || finish ? "" : say("scene.blockName", { at: integer(t + 1), count: integer(T) }),
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
    { label: say("number.b"), value: integer(a.block), testid: "tiles-b" },
    { label: say("number.tile"), value: grouped(a.held.tile), testid: "tiles-tile" },
    { label: say("number.table"), value: grouped(a.held.table), testid: "tiles-table-cells" },
  ];
  if (ctx.withheld) return items;
  const f = focusOf(a, ctx, stepId);
  if (stepId === "read" || stepId === "rescale") {
    const t = atOf(a, ctx, stepId) - 1;
    items.push({ label: say("number.m", { word: a.words[f] }), value: num(a.steps[t].m[f]), testid: "tiles-m" });
  }
  if (stepId === "finish") items.push({ label: say("number.gap"), value: tiny(gap(a.output, a.plain.output)), testid: "tiles-gap-number" });
  return items;
}

export default {
  id: "tiles",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
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
    // the words shown: the lesson's example in the page's language where it carries it (the same numbers)
    const words = p.text ? tiles.tokens : exampleWords(EXAMPLE, tiles.tokens);
    const answer = { ...tiles, words, plain: { output: plain.output, weights: plain.weights } };
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
