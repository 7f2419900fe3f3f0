// Chapter `inside` (the last): look inside a real model the way people who study models do.
// Follow one word's attention down through every layer (rollout, then flow: Abnar & Zuidema 2020);
// switch heads off and watch the next word change; read every layer's guess (the logit lens); set
// two views side by side with one focus and see where they differ. Every number comes from the
// server: POST /api/rollout, /api/ablate and /api/lens.

import { el } from "../dom.js";
import { deltaRgb, fixed3, heatRgb, inkFor, rgbCss } from "../format.js";
import { difference, rowDifference, sameTokens, side, tokenOfWord } from "../inside/compare.js";
import { pyMatrix, pyStr, pyStrings } from "../pycode.js";
import { BarGrid } from "../scene/bargrid.js";
import { LayerStack, spacing } from "../scene/layerstack.js";
import { BarColumn } from "../scene/barcolumn.js";
import { decimal, integer, language, listOf, locale, percent, t } from "../i18n.js";
import { ANIMAL, picker, predictBox, scrollBox, sentenceBox } from "./widgets.js";

export const ENCODER = "all-minilm-l6-v2";
export const DECODER = "smollm2-135m";
const WIDE = "The animal didn't cross the street because it was too wide.";
const PROMPT = "The capital of France is";
// three heads the "switch a head off" question offers (layer, head): an early, a middle and a late one; the
// class's questions (app/classroom/questions.py: inside.head-off, asked at steps 1–2, and inside.lens, asked at
// step 3, before the lens shows the answer) use the same three
const CONTENDERS = [
  [0, 6],
  [23, 4],
  [27, 1],
];
// the code panel's comments while a step holds its answer back: code stays Python (and English), as every code panel
const LENS_HIDDEN = "Every layer's guess is hidden for now: think about your answer first.";
const CHANGE_HIDDEN = "The change is hidden for now: think about your answer first.";
// the steps whose answer waits for the learner's guess (predict first): what they show answers their
// question (rollout's shares, the lens's marked layer, compare's change)
const GUESS_FIRST = new Set(["rollout", "lens", "compare"]);
const MODES = ["sentences", "models", "masks", "ablation"]; // the compare step's modes (their names: chapter.inside.mode.…)

// The chapter's words are in the catalogs (static/i18n/<lang>.json, keys "chapter.inside.…"), read when
// drawn (chapters/CONTRACT.md: "Words in every language"); numbers in the language's own digits and signs,
// English's exactly as before.
const say = (key, values) => t(`chapter.inside.${key}`, values);
const quote = (w) => t("format.quote", { text: w });
const english = () => language() === "en";
const pct = (p) => (english() ? `${(100 * p).toFixed(1)}%` : percent(p, 1));
const dec = (x, digits) => (english() ? x.toFixed(digits) : decimal(x, digits));
const signed = (d) => `${d >= 0 ? "+" : "−"}${dec(Math.abs(d), 3)}`;
const word = (t) => t.replace(/^##/, "").trim() || "␣";
const int = (s, d) => (String(s).trim() !== "" && Number.isInteger(Number(s)) ? Number(s) : d);

/** "3.5 12.0" → [[3, 5], [12, 0]] (pairs that do not read as two whole numbers are dropped). */
export function parseHeads(text) {
  return String(text ?? "")
    .split(/[\s,;]+/)
    .filter(Boolean)
    .map((p) => p.split(".").map(Number))
    .filter((p) => p.length === 2 && p.every((x) => Number.isInteger(x) && x >= 0));
}

export function headsParam(pairs) {
  return pairs.map(([l, h]) => `${l}.${h}`).join(" ");
}

/** The token the chapter follows when none is chosen: "it" if the sentence has one, else the last word's. */
export function defaultFocus(tokens) {
  const it = tokens.findIndex((t) => t.trim().toLowerCase() === "it");
  if (it >= 0) return it;
  let k = tokens.length - 1;
  while (k > 0 && /^\[.*\]$|^[.!?]$/.test(tokens[k].trim())) k -= 1;
  return k;
}

/** How many maximum flows a flow answer took: every layer's table (n² a layer), or the focus's paths only (n a layer). */
function flowCount(f) {
  const n = f.tokens.length;
  return f.attention.length * (f.layers ? n * n : n);
}

/** The line that says why a long sentence's flow shows no table per layer (the server leaves them out). */
function flowNoTables(f) {
  const n = f.tokens.length;
  return say("flow.noTables", { n: integer(n), flows: integer(n * n), most: integer(f.flow_table_tokens), word: quote(word(f.tokens[f.focus])) });
}

/** Shannon entropy (bits) of a row of shares: how spread out it is. */
function entropy(row) {
  const s = row.reduce((a, b) => a + b, 0);
  return -row.reduce((a, x) => (x > 0 ? a + (x / s) * Math.log2(x / s) : a), 0);
}

/** The three words (other than the focus) the focus takes most from, in sentence order, and the largest. */
function contenders(a) {
  const row = a.focus_paths.through[0];
  const order = [...row.keys()].filter((k) => k !== a.focus && !/^\[.*\]$/.test(a.tokens[k])).sort((i, j) => row[j] - row[i]);
  const three = order.slice(0, 3).sort((i, j) => i - j);
  return { three, best: order[0] };
}

const cache = new Map(); // answers by request (a change of one parameter asks again only what it changes)
const CACHED = 24;

function ask(ctx, path, body) {
  const key = `${path} ${JSON.stringify(body)}`;
  if (!cache.has(key)) {
    const p = ctx.post(path, body);
    cache.set(key, p);
    p.catch(() => cache.delete(key)); // a failed or aborted request is asked again next time
    while (cache.size > CACHED) cache.delete(cache.keys().next().value);
  }
  return cache.get(key);
}

/** A part of the answer that may fail on its own (the decoder not installed, a sentence too long for flow). */
async function part(promise) {
  try {
    return await promise;
  } catch (err) {
    if (err?.name === "AbortError") throw err;
    return { error: err?.message ?? String(err) };
  }
}

const STEPS = [
  {
    id: "rollout",
    get title() {
      return say("rollout.title");
    },
    get short() {
      return say("rollout.short");
    },
    figure: "#chapter-stage, [data-testid=inside-rollout-table]",
    ask: (a) => {
      const { three, best } = contenders(a.rollout);
      const t = a.rollout.tokens;
      return {
        q: say("rollout.q", { layers: integer(a.rollout.layers.length), word: quote(word(t[a.rollout.focus])) }),
        options: three.map((k) => word(t[k])),
        answer: three.indexOf(best),
        why: () =>
          say("rollout.why", {
            word: quote(word(t[a.rollout.focus])),
            share: pct(a.rollout.focus_paths.through[0][best]),
            best: quote(word(t[best])),
            layers: integer(a.rollout.layers.length),
          }),
      };
    },
    text: (a) => {
      const r = a.rollout;
      const L = r.layers.length;
      return say("rollout.text", { layers: integer(L), word: quote(word(r.tokens[r.focus])) });
    },
  },
  {
    id: "flow",
    get title() {
      return say("flow.title");
    },
    get short() {
      return say("flow.short");
    },
    figure: "#chapter-stage, [data-testid=inside-flow-table]",
    ask: (a) => ({
      q: say("flow.q", { word: quote(word(a.rollout.tokens[a.rollout.focus])) }),
      options: [say("flow.more"), say("flow.fewer")],
      answer: a.flow.error ? 0 : entropy(a.flow.focus_paths.through[0]) >= entropy(a.rollout.focus_paths.through[0]) ? 0 : 1,
      why: () =>
        a.flow.error
          ? a.flow.error
          : say("flow.why", { rollout: dec(entropy(a.rollout.focus_paths.through[0]), 2), flow: dec(entropy(a.flow.focus_paths.through[0]), 2) }),
    }),
    text: (a) =>
      a.flow.error
        ? say("flow.error", { reason: a.flow.error })
        : say("flow.text", { word: quote(word(a.rollout.tokens[a.rollout.focus])), count: integer(flowCount(a.flow)) }),
  },
  {
    id: "off",
    get title() {
      return say("off.title");
    },
    get short() {
      return say("off.short");
    },
    figure: "[data-testid=inside-candidates]",
    ask: (a) => {
      if (!a.contenders || a.contenders.some((c) => c.error)) return null;
      const drops = a.contenders.map((c) => c.candidates.before[0].p - pOf(c.candidates.after, c.candidates.before[0].id));
      const best = drops.indexOf(Math.max(...drops));
      const winner = a.contenders[0].candidates.before[0].token;
      return {
        q: say("off.q", { word: quote(winner.trim()) }),
        options: CONTENDERS.map(([l, h]) => say("off.option", { layer: integer(l), head: integer(h) })),
        answer: best,
        why: () =>
          say("off.why", {
            list: CONTENDERS.map(([l, h], i) => say("off.change", { layer: integer(l), head: integer(h), change: signed(-drops[i]) })).join("; "),
            heads: integer(a.off.layers * a.off.heads_per_layer),
          }),
      };
    },
    text: (a) => {
      if (a.off.error) return say("decoderError", { reason: a.off.error });
      const before = a.off.candidates.before[0];
      const after = a.off.candidates.after[0];
      const off = a.off.heads.length;
      return off
        ? say("off.textOff", { off, before: quote(before.token.trim()), p: pct(before.p), after: quote(after.token.trim()), pAfter: pct(after.p) })
        : say("off.text", { model: short(a.off.model), prompt: quote(a.off.prompt), word: quote(before.token.trim()), p: pct(before.p) });
    },
  },
  {
    id: "lens",
    get title() {
      return say("lens.title");
    },
    get short() {
      return say("lens.short");
    },
    figure: "#chapter-stage, [data-testid=inside-lens-table]",
    ask: (a) => {
      if (a.lens.error) return null;
      const first = a.lens.first_top;
      const bands = [
        [-1, 9],
        [10, 19],
        [20, 29],
      ];
      return {
        q: say("lens.q", { word: quote(a.lens.answer.token.trim()) }),
        options: [say("lens.early"), say("lens.middle"), say("lens.late")],
        answer: bands.findIndex(([lo, hi]) => first >= lo && first <= hi),
        why: (_, ctx) =>
          ctx?.withheld
            ? say("lens.whyLater")
            : say("lens.why", {
                layer: integer(first),
                guesses: listOf(
                  a.lens.layers
                    .filter((r) => r.layer < first)
                    .slice(-3)
                    .map((r) => quote(r.top[0].token.trim())),
                ),
              }),
      };
    },
    text: (a, ctx) =>
      a.lens.error
        ? say("decoderError", { reason: a.lens.error })
        : ctx?.withheld
          ? say("lens.hidden")
          : say("lens.text", {
              vocab: a.lens.vocab.toLocaleString(english() ? "en" : locale()),
              prompt: quote(a.lens.prompt),
              word: quote(a.lens.answer.token.trim()),
            }),
  },
  {
    id: "compare",
    get title() {
      return say("compare.title");
    },
    get short() {
      return say("compare.short");
    },
    figure: "#chapter-stage, [data-testid=inside-compare-diff]",
    ask: (a) => {
      const c = a.compare;
      if (c.error || !c.diff || c.mode !== "sentences") return null;
      const names = c.left.names;
      const street = names.findIndex((n) => n.toLowerCase() === "street");
      if (street < 0) return null;
      return {
        q: say("compare.q", { b: quote(c.bWord), a: quote(c.aWord), focus: quote(c.focusName), street: quote("street") }),
        options: [say("compare.more", { street: quote("street") }), say("compare.less", { street: quote("street") })],
        answer: c.diff.delta[street] >= 0 ? 0 : 1,
        why: () =>
          say("compare.why", { change: signed(c.diff.delta[street]), from: pct(c.left.rows[0][street]), to: pct(c.right.rows[0][street]), it: quote("it") }),
      };
    },
    text: (a, ctx) => {
      const c = a.compare;
      if (c.error) return say("compare.error", { reason: c.error });
      const sides = { left: c.leftTitle, right: c.rightTitle, focus: quote(c.focusName) };
      if (!c.diff) return say("compare.textApart", { ...sides, why: c.why });
      if (holdsBack(a, "compare", ctx)) return say("compare.textBefore", sides); // the biggest changes: after the guess
      return say("compare.text", { ...sides, top: listOf(c.diff.top.map(({ i, j, d }) => `${quote(c.cellName(i, j))} ${signed(d)}`)) });
    },
  },
];

/** The question of step `stepId` about answer `a`, or null (none, or a part of the answer it needs is missing). */
function questionOf(a, stepId) {
  try {
    return STEPS.find((s) => s.id === stepId)?.ask?.(a) ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether step `stepId` holds its answer back: for a learner alone (ctx.alone), predict first, until
 * they have picked an answer to the step's question (a step without one shows everything); the lens
 * also while a class answers (ctx.withheld). In a class the teacher decides what shows (Ask the class,
 * H): the projector, the teacher's window and the phones following show the answer with the question.
 * A class question or the teacher's H at the lens, or the step before it, stands for the lens's guess
 * (InsideView.update): a page that leaves the class later does not ask it again.
 */
function holdsBack(a, stepId, ctx) {
  if (stepId === "lens" && ctx?.withheld) return true;
  return Boolean(ctx?.alone) && GUESS_FIRST.has(stepId) && !a.guessed.has(stepId) && questionOf(a, stepId) !== null;
}

function pOf(list, id) {
  return list.find((c) => c.id === id)?.p ?? 0;
}

export default {
  id: "inside",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: {
    sentence: ANIMAL,
    model: ENCODER,
    follow: "", // the token followed (its index; empty: "it", or the last word): not `focus`, the attention view's
    prompt: PROMPT,
    heads: "",
    mode: "sentences",
    b: WIDE,
    vhead: "0",
  },
  controls: [],
  steps: STEPS,

  async load(ctx) {
    const p = ctx.params;
    const model = p.model === DECODER ? DECODER : ENCODER;
    const base = { model, sentence: p.sentence };
    let focus = int(p.follow, null);
    if (focus === null) focus = defaultFocus((await ask(ctx, "/api/rollout", base)).tokens);
    const heads = parseHeads(p.heads);
    const vhead = int(p.vhead, 0);
    // one request after another: the server computes two at a time, and a page of many would be told to wait
    const rollout = await ask(ctx, "/api/rollout", { ...base, focus });
    const flow = await part(ask(ctx, "/api/rollout", { ...base, focus, method: "flow" }));
    const off = await part(ask(ctx, "/api/ablate", { model: DECODER, prompt: p.prompt, heads, layer: 29, head: vhead }));
    const lens = await part(ask(ctx, "/api/lens", { model: DECODER, prompt: p.prompt }));
    const compare = await part(compareAnswer(ctx, p, base, focus, heads, vhead));
    const contended = [];
    for (const h of CONTENDERS) contended.push(await part(ask(ctx, "/api/ablate", { model: DECODER, prompt: p.prompt, heads: [h], layer: 29, head: 0 })));
    // guessed: the steps whose question this page's learner has answered (a new answer asks again)
    return { rollout, flow, off: { ...off, prompt: p.prompt }, lens: { ...lens, prompt: p.prompt }, compare, contenders: contended, params: { ...p }, guessed: new Set() };
  },

  mount(ctx) {
    return new InsideView(ctx);
  },

  numbers(a, stepId, ctx) {
    const r = a.rollout;
    if (stepId === "rollout" && holdsBack(a, stepId, ctx)) {
      // before the guess: only what the word keeps of itself (the largest other share is the question's answer)
      return [{ label: say("number.own", { method: r.method, word: quote(word(r.tokens[r.focus])) }), value: fixed3(r.focus_paths.through[0][r.focus]), testid: "inside-self" }];
    }
    if (stepId === "rollout" || stepId === "flow") {
      const m = stepId === "flow" && !a.flow.error ? a.flow : r;
      const { best } = contenders(m);
      return [
        { label: say("number.share", { method: m.method, word: quote(word(r.tokens[r.focus])), best: quote(word(r.tokens[best])) }), value: fixed3(m.focus_paths.through[0][best]), testid: "inside-share" },
        { label: say("number.self"), value: fixed3(m.focus_paths.through[0][r.focus]), testid: "inside-self" },
      ];
    }
    if (stepId === "off" && !a.off.error) {
      const b = a.off.candidates.before[0];
      return [
        { label: say("number.before", { word: quote(b.token.trim()) }), value: pct(b.p), testid: "inside-p-before" },
        { label: say("number.after"), value: pct(pOf(a.off.candidates.after, b.id)), testid: "inside-p-after" },
        { label: say("number.cosine"), value: dec(Math.min(...a.off.cosine), 4), testid: "inside-cosine" },
      ];
    }
    if (stepId === "lens" && !a.lens.error && !holdsBack(a, stepId, ctx)) {
      return [{ label: say("number.firstTop", { word: quote(a.lens.answer.token.trim()) }), value: integer(a.lens.first_top), testid: "inside-first-top" }];
    }
    if (stepId === "compare" && a.compare.diff && !holdsBack(a, stepId, ctx)) {
      const t = a.compare.diff.top[0];
      return [{ label: say("number.largest", { cell: quote(a.compare.cellName(t.i, t.j)) }), value: signed(t.d), testid: "inside-largest-change" }];
    }
    return [];
  },

  code(a, stepId, ctx) {
    if (stepId === "rollout" || stepId === "flow") return rolloutCode(a.rollout);
    if (stepId === "lens" && holdsBack(a, stepId, ctx)) return `# ${LENS_HIDDEN}`;
    if (stepId === "lens" && !a.lens.error) return lensCode(a.lens);
    if (stepId === "off" && !a.off.error) return cosineCode(a.off);
    if (stepId === "compare" && holdsBack(a, stepId, ctx)) return `# ${CHANGE_HIDDEN}`;
    if (stepId === "compare" && !a.compare.error) return compareCode(a.compare);
    return "";
  },
};

/** The compare step's second view and what lines the two up. */
async function compareAnswer(ctx, p, base, focus, heads, vhead) {
  const mode = MODES.includes(p.mode) ? p.mode : "sentences";
  const left = await ask(ctx, "/api/rollout", { ...base, focus });
  if (mode === "ablation") {
    const last = base.model === DECODER ? 29 : 5;
    const ab = await ask(ctx, "/api/ablate", { model: base.model, sentence: base.sentence, heads, layer: last, head: vhead });
    const names = ab.tokens.map(word);
    const diff = rowDifference(ab.weights.before[focus], ab.weights.after[focus], focus);
    return {
      mode, ablation: ab, diff, names, focusName: word(left.tokens[focus]), focus,
      leftTitle: say("compare.allOn"), rightTitle: heads.length ? say("compare.headsOff", { n: heads.length }) : say("compare.noneOff"),
      cellName: (_, j) => names[j],
    }; // fmt
  }
  let right;
  let leftTitle = "";
  let rightTitle = "";
  if (mode === "masks") {
    if (base.model === DECODER) return { error: say("compare.decoderCausal"), mode };
    right = await ask(ctx, "/api/rollout", { ...base, focus, mask: "causal" });
    leftTitle = say("compare.fullMask");
    rightTitle = say("compare.causalMask");
  } else {
    const other = mode === "models" ? { model: base.model === DECODER ? ENCODER : DECODER, sentence: p.sentence } : { model: base.model, sentence: p.b };
    const probe = await ask(ctx, "/api/rollout", other);
    const sameText = other.sentence === base.sentence;
    let f = sameTokens(left, probe) ? focus : tokenOfWord(probe, left.words[focus]);
    if (f === null) f = defaultFocus(probe.tokens);
    right = await ask(ctx, "/api/rollout", { ...other, focus: f });
    if (mode === "models") {
      leftTitle = short(left.model);
      rightTitle = short(right.model);
    } else if (!sameText) {
      [leftTitle, rightTitle] = firstDifference(p.sentence, p.b);
    }
  }
  const byWord = !sameTokens(left, right);
  const l = side(left, byWord);
  const r = side(right, byWord);
  const diff = difference(l, r);
  const changed = l.names.findIndex((n, j) => n !== r.names[j]);
  return {
    mode, leftAnswer: left, rightAnswer: right, left: l, right: r, byWord,
    diff: diff && { ...diff, top: diff.top.map(({ j, d }) => ({ i: 0, j, d })) },
    why: byWord ? say("compare.whyApart") : "",
    focusName: word(left.tokens[focus]), focus, leftTitle, rightTitle,
    aWord: changed >= 0 ? l.names[changed] : "", bWord: changed >= 0 ? r.names[changed] : "",
    cellName: (_, j) => l.names[j] === r.names[j] ? l.names[j] : `${l.names[j]}/${r.names[j]}`,
  }; // fmt
}

/** A model's name as people say it: "SmolLM2-135M", "all-MiniLM-L6-v2". */
function short(name) {
  return name.replace(/-Instruct.*$/, "");
}

/** The first word where two sentences differ, quoted, from each ("…tired." / "…wide."). */
function firstDifference(a, b) {
  const x = a.split(/\s+/);
  const y = b.split(/\s+/);
  let i = 0;
  while (i < Math.min(x.length, y.length) - 1 && x[i] === y[i]) i += 1;
  return [quote(`…${x.slice(i, i + 2).join(" ")}`), quote(`…${y.slice(i, i + 2).join(" ")}`)];
}

function rolloutCode(r) {
  const n = r.tokens.length;
  if (n > 16) return "# The sentence is long: its layers' tables would fill pages. Try a sentence of 16 tokens or fewer.";
  return [
    "import json",
    "import numpy as np",
    "",
    `tokens = ${pyStrings(r.tokens)}`,
    `# A[l]: layer l + 1's attention, its heads' weights averaged (${r.model}, from the server)`,
    `A = np.array([${r.attention.map((m) => pyMatrix(m, "        ")).join(",\n    ")}])`,
    "",
    "A_hat = 0.5 * A + 0.5 * np.eye(len(tokens))  # half of each token is carried on as it was (the residual)",
    "A_hat /= A_hat.sum(axis=-1, keepdims=True)",
    "rollout = A_hat[0]",
    "for layer in A_hat[1:]:",
    "    rollout = layer @ rollout  # this layer mixes what the layers below made",
    "",
    `focus = ${r.focus}  # ${pyStr(r.tokens[r.focus])}`,
    "print(json.dumps({'focus': tokens[focus], 'shares': [round(float(x), 6) for x in rollout[focus]]}))",
  ].join("\n");
}

function compareCode(c) {
  const names = c.mode === "ablation" ? c.names : c.left.names.map((_, j) => c.cellName(0, j));
  const left = c.mode === "ablation" ? c.ablation.weights.before[c.focus] : c.left.rows[0];
  const right = c.mode === "ablation" ? c.ablation.weights.after[c.focus] : c.right.rows[0];
  if (left.length !== right.length) return "# The two sides have different words: there is no cell-by-cell change to compute.";
  return [
    "import json",
    "import numpy as np",
    "",
    `# what ${pyStr(c.focusName)} takes from each column, left and right (from the server)`,
    `names = ${pyStrings(names)}`,
    `left = np.array([${left.join(", ")}])`,
    `right = np.array([${right.join(", ")}])`,
    "change = right - left",
    "biggest = np.argsort(-np.abs(change), kind='stable')[:3]",
    "print(json.dumps({names[j]: round(float(change[j]), 6) for j in biggest}))",
  ].join("\n");
}

function lensCode(lens) {
  return [
    "import json",
    "import numpy as np",
    "",
    "# Each layer's top guess and its chance (from the server), and the layer that first puts the final word on top",
    `guesses = ${JSON.stringify(lens.layers.map((r) => [r.layer, r.top[0].token, r.top[0].p]))}`,
    `final = ${pyStr(lens.answer.token)}`,
    "first = next(layer for layer, token, p in guesses if token == final)",
    "chance = np.array([p for _, _, p in guesses])",
    "print(json.dumps({'first_top': first, 'largest_jump_after_layer': int(np.argmax(np.diff(chance))) - 1}))",
  ].join("\n");
}

function cosineCode(off) {
  return [
    "import json",
    "import numpy as np",
    "",
    `# the cosine of each token's final vector with and without the heads ${JSON.stringify(off.heads)} (from the server)`,
    `cosine = np.array([${off.cosine.join(", ")}])`,
    `tokens = ${pyStrings(off.tokens)}`,
    "changed = int(np.argmin(cosine))",
    "print(json.dumps({'most_changed': tokens[changed], 'cosine': float(cosine[changed])}))",
  ].join("\n");
}

/**
 * A heat-shaded table: one row per token or word (`names`), one column per series (`columns`:
 * [{ title, values }]), each cell shaded by its value (a change: blue less, orange more). Narrow, so
 * that a projector shows it at a size read from the back of the room.
 */
function columnsTable(names, columns, { caption, testid, diverging = [], marks = [], rows = null }) {
  const t = el("table", { className: "ca-table ca-heat inside-table", dataset: { testid } });
  t.append(el("caption", {}, caption));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, ""));
  for (const c of columns) head.append(el("th", { scope: "col" }, c.title));
  const thead = el("thead");
  thead.append(head);
  t.append(thead);
  const body = el("tbody");
  const peak = columns.map((c) => Math.max(1e-12, ...c.values.map(Math.abs)));
  names.forEach((name, i) => {
    if (rows && !rows.includes(i)) return;
    const tr = el("tr", { dataset: { testid: `${testid}-${i}` } });
    tr.append(el("th", { scope: "row" }, name));
    columns.forEach((c, j) => {
      const v = c.values[i];
      const change = diverging.includes(j);
      const td = el("td", { dataset: { testid: `${testid}-${i}-${j}` } }, change ? signed(v) : fixed3(v));
      const rgb = change ? deltaRgb(v / peak[j]) : heatRgb(v / peak[j]);
      td.style.background = rgbCss(rgb);
      td.style.color = inkFor(rgb);
      if (marks.some(([a, b]) => a === i && b === j)) td.classList.add("ca-hot");
      tr.append(td);
    });
    body.append(tr);
  });
  t.append(body);
  return scrollBox(t);
}

const ROWS = 10; // a table's rows at most: the tokens (or words) with the largest values, in sentence order

/** The indices of the `ROWS` largest of `values` (and `keep`), in order; null when all of them fit. */
function largest(values, keep = []) {
  if (values.length <= ROWS) return null;
  const order = [...values.keys()].sort((i, j) => Math.abs(values[j]) - Math.abs(values[i]) || i - j);
  const chosen = new Set([...keep.filter((k) => k !== null && k !== undefined), ...order].slice(0, ROWS));
  return [...chosen].sort((i, j) => i - j);
}

const outOf = (rows, n) => (rows ? say("table.outOf", { rows: integer(rows.length), n: integer(n) }) : "");

/** The layers a table shows as columns: the input, then up to five layers spread evenly below the last. */
function shownLayers(L) {
  if (L <= 6) return Array.from({ length: L }, (_, i) => i);
  return [0, ...[1, 2, 3, 4, 5].map((k) => Math.round((k * L) / 6))];
}


/** The chapter's panel (controls, a question, tables) and 3D view (the layer stack, the lens column, bars). */
class InsideView {
  constructor(ctx) {
    this.ctx = ctx;
    this.stage = ctx.stage;
    this.controls = el("div", { className: "chapter-controls inside-controls" });
    this.ask = el("div", { className: "wr-ask", dataset: { testid: "inside-ask" } });
    this.body = el("div", { className: "inside-body" });
    ctx.panel.append(this.body, this.ask, this.controls); // the table first: the step's words speak of it
    this.objects = [];
  }

  update(a, stepId) {
    this.answer = a;
    if (stepId !== this.askedStep || a !== this.askedAnswer) {
      const question = questionOf(a, stepId);
      const answered = () => {
        a.guessed.add(stepId);
        this.ctx.redraw(); // the step's table, 3D view, numbers and code, now that the guess is made
      };
      predictBox(this.ask, question, { testid: "inside-ask", answer: () => this.answer, ctx: this.ctx, answered });
      this.askedStep = stepId;
      this.askedAnswer = a;
    }
    // the class's lens question (asked at the off and lens steps: app/classroom/questions.py) stands for the guess
    if ((stepId === "off" || stepId === "lens") && this.ctx.withheld) a.guessed.add("lens");
    // predict first: a step's answer waits for the guess (the lens's also while the class answers)
    const hidden = holdsBack(a, stepId, this.ctx);
    const why = hidden && (stepId === "lens" && this.ctx.withheld ? say("lens.hidden") : say(`${stepId}.guessFirst`));
    this.controls.replaceChildren(...this.controlsFor(a, stepId));
    this.body.replaceChildren(...(hidden ? [el("p", { className: "caveat", dataset: { testid: "inside-withheld" } }, why)] : this[`${stepId}Panel`](a)));
    this.clearScene();
    if (this.stage) {
      this.stage.autoFit = true;
      this[`${stepId}Scene`](a, hidden);
      // a camera roughly at the distance the drawing needs; the stage then fits it exactly (autoFit)
      const { width, height } = this.extent();
      const c = this.stage.container;
      const aspect = c.clientWidth / Math.max(1, c.clientHeight);
      const d = Math.max(width / Math.min(aspect, 1.6), height) * 1.6 + 2;
      this.stage.look([0, height / 2 + d * 0.12, d], [0, height / 2, 0]);
    }
  }

  // ---- the controls ---------------------------------------------------------------------------

  controlsFor(a, stepId) {
    const set = (patch) => this.ctx.setParams(patch);
    const r = a.rollout;
    const focusPicker = picker("follow", r.tokens.map((t, i) => [i, word(t)]), r.focus, (v) => set({ follow: v }), "inside-focus");
    if (stepId === "rollout" || stepId === "flow") {
      const model = picker("model", [[ENCODER, "all-MiniLM-L6-v2"], [DECODER, "SmolLM2-135M"]], a.params.model, (v) => set({ model: v, follow: "" }), "inside-model");
      return [sentenceBox(a.params.sentence, (s) => set({ sentence: s, follow: "" }), "inside-sentence"), model, focusPicker];
    }
    if (stepId === "off" || stepId === "lens") {
      return [sentenceBox(a.params.prompt, (s) => set({ prompt: s }), "inside-prompt")];
    }
    const mode = picker("compare", MODES.map((m) => [m, say(`mode.${m}`)]), a.compare.mode ?? "sentences", (v) => set({ mode: v }), "inside-mode");
    const items = [mode, focusPicker];
    if ((a.compare.mode ?? "sentences") === "sentences") items.unshift(sentenceBox(a.params.b, (s) => set({ b: s }), "inside-b"));
    return items;
  }

  // ---- the panels ---------------------------------------------------------------------------

  rolloutPanel(a) {
    const r = a.rollout;
    const L = r.layers.length;
    const through = r.focus_paths.through;
    // row l of `through` is after l layers: after layer l − 1, as the overview numbers the layers from 0
    const columns = shownLayers(L).map((l) => ({ title: l === 0 ? say("table.input") : say("table.after", { layer: integer(l - 1) }), values: through[l] }));
    const rows = largest(through[0], [r.focus]);
    return [
      columnsTable(r.tokens.map(word), columns, {
        caption: say("table.rollout", { word: quote(word(r.tokens[r.focus])), outOf: outOf(rows, r.tokens.length), input: quote(say("table.input")), layers: integer(L) }),
        testid: "inside-rollout-table",
        rows,
      }),
    ];
  }

  flowPanel(a) {
    if (a.flow.error) return [el("p", { className: "caveat", dataset: { testid: "inside-flow-error" } }, a.flow.error)];
    const r = a.rollout;
    const f = a.flow.focus_paths.through[0];
    const o = r.focus_paths.through[0];
    const note = a.flow.layers ? [] : [el("p", { className: "inside-note", dataset: { testid: "inside-flow-note" } }, flowNoTables(a.flow))];
    return [
      columnsTable(r.tokens.map(word), [{ title: say("table.flow"), values: f }, { title: say("table.rolloutColumn"), values: o }, { title: say("table.flowMinusRollout"), values: f.map((x, k) => x - o[k]) }], {
        caption: say("table.flowCaption", { word: quote(word(r.tokens[r.focus])), outOf: outOf(largest(f, [r.focus]), r.tokens.length) }),
        testid: "inside-flow-table",
        diverging: [2],
        rows: largest(f, [r.focus]),
      }),
      ...note,
    ];
  }

  offPanel(a) {
    if (a.off.error) return [el("p", { className: "caveat" }, a.off.error)];
    const off = new Set(a.off.heads.map(([l, h]) => `${l}.${h}`));
    const grid = el("div", { className: "inside-heads", role: "group", "aria-label": say("heads.label"), dataset: { testid: "inside-heads" } });
    grid.style.setProperty("--heads", String(a.off.heads_per_layer));
    for (let l = 0; l < a.off.layers; l++) {
      for (let h = 0; h < a.off.heads_per_layer; h++) {
        const key = `${l}.${h}`;
        const b = el("button", { type: "button", "aria-pressed": String(off.has(key)), "aria-label": say("heads.head", { layer: integer(l), head: integer(h) }), title: say("heads.head", { layer: integer(l), head: integer(h) }), dataset: { testid: `inside-head-${l}-${h}` } });
        b.addEventListener("click", () => {
          const next = off.has(key) ? [...off].filter((k) => k !== key) : [...off, key];
          this.ctx.setParams({ heads: next.join(" ") });
        });
        grid.append(b);
      }
    }
    const rows = a.off.candidates.before.map((c, i) => {
      const after = a.off.candidates.after[i];
      return [c.token, c.p, pOf(a.off.candidates.after, c.id), after.token, after.p];
    });
    const t = el("table", { className: "ca-table", dataset: { testid: "inside-candidates" } });
    t.append(el("caption", {}, say("heads.caption", { n: a.off.heads.length })));
    const head = el("tr");
    for (const h of ["before", "p", "pAfter", "after", "p"].map((k) => say(`heads.column.${k}`))) head.append(el("th", { scope: "col" }, h));
    t.append(head);
    rows.forEach((r, i) => {
      const tr = el("tr", { dataset: { testid: `inside-candidate-${i}` } });
      tr.append(el("td", {}, quote(r[0])), el("td", {}, pct(r[1])), el("td", {}, pct(r[2])), el("td", {}, quote(r[3])), el("td", {}, pct(r[4])));
      t.append(tr);
    });
    const note = el("p", { className: "inside-note", dataset: { testid: "inside-off" } }, a.off.heads.length ? say("heads.off", { heads: listOf(a.off.heads.map(([l, h]) => say("heads.head", { layer: integer(l), head: integer(h) }))) }) : say("heads.offNone"));
    const heads = el("div", { className: "inside-grid" });
    heads.append(el("p", { className: "inside-note" }, say("heads.size", { layers: integer(a.off.layers), heads: integer(a.off.heads_per_layer) })), grid);
    const row = el("div", { className: "inside-pair" });
    row.append(scrollBox(t), heads);
    return [row, note];
  }

  lensPanel(a) {
    if (a.lens.error) return [el("p", { className: "caveat" }, a.lens.error)];
    const rows = a.lens.layers;
    // the rows where the guess changes (the embedding's, the marked one and the last always), the latest ten
    let shown = rows.filter((r, i) => i === 0 || i === rows.length - 1 || r.layer === a.lens.first_top || r.top[0].id !== rows[i - 1].top[0].id);
    if (shown.length > ROWS) {
      const late = shown.slice(-(ROWS - 1));
      const marked = shown.find((r) => r.layer === a.lens.first_top);
      shown = [shown[0], ...(late.includes(marked) ? late : [marked, ...late.slice(1)])];
    }
    const t = el("table", { className: "ca-table inside-lens", dataset: { testid: "inside-lens-table" } });
    t.append(el("caption", {}, say("lens.caption", { prompt: quote(a.lens.prompt) })));
    const head = el("tr");
    for (const h of ["after", "guess", "p", "second"].map((k) => say(`lens.column.${k}`))) head.append(el("th", { scope: "col" }, h));
    t.append(head);
    for (const r of [...shown].reverse()) {
      const tr = el("tr", { dataset: { testid: `inside-lens-${r.layer}` } });
      if (r.layer === a.lens.first_top) tr.classList.add("inside-first");
      tr.append(el("th", { scope: "row" }, r.layer < 0 ? say("lens.embedding") : say("lens.layer", { layer: integer(r.layer) })));
      tr.append(el("td", {}, quote(word(r.top[0].token))), el("td", {}, pct(r.top[0].p)), el("td", {}, quote(word(r.top[1].token))));
      t.append(tr);
    }
    return [scrollBox(t)];
  }

  comparePanel(a) {
    const c = a.compare;
    if (c.error) return [el("p", { className: "caveat" }, c.error)];
    if (c.mode === "ablation") {
      // the focused query's row of the shown head: where it looks, with and without the heads
      const f = c.focus;
      const before = c.ablation.weights.before[f];
      const after = c.ablation.weights.after[f];
      const marks = c.diff.top.filter(({ i }) => i === f).map(({ j }) => [j, 2]);
      return [
        columnsTable(c.names, [{ title: say("compare.allOnColumn"), values: before }, { title: c.rightTitle, values: after }, { title: say("compare.change"), values: c.diff.delta }], {
          caption: say("compare.headCaption", { layer: integer(c.ablation.layer), head: integer(c.ablation.head), focus: quote(c.focusName) }),
          testid: "inside-compare-diff",
          diverging: [2],
          marks,
          rows: largest(c.diff.delta, [...c.diff.top.map((t) => t.j)]),
        }),
      ];
    }
    const left = c.left.rows[0];
    const right = c.right.rows[0];
    if (!c.diff) {
      const both = el("div", { className: "inside-pair" });
      both.append(
        columnsTable(c.left.names, [{ title: c.leftTitle, values: left }], { caption: say("compare.leftCaption", { focus: quote(c.focusName) }), testid: "inside-compare-left" }),
        columnsTable(c.right.names, [{ title: c.rightTitle, values: right }], { caption: say("compare.rightCaption"), testid: "inside-compare-right" }),
      );
      return [both];
    }
    const names = c.left.names.map((_, j) => c.cellName(0, j));
    return [
      columnsTable(names, [{ title: c.leftTitle, values: left }, { title: c.rightTitle, values: right }, { title: say("compare.change"), values: c.diff.delta }], {
        caption: say(largest(left) ? "compare.captionTop" : "compare.caption", { focus: quote(c.focusName), byWord: String(c.byWord), rows: integer(ROWS) }),
        testid: "inside-compare-diff",
        diverging: [2],
        marks: c.diff.top.map(({ j }) => [j, 2]),
        rows: largest(c.diff.delta),
      }),
    ];
  }

  // ---- the 3D view ----------------------------------------------------------------------------

  /** A layer stack of a rollout or flow answer; `bare`: its balls only, none of the shares or paths. */
  stack(answer, { x0 = 0, title = null, span = null, axis = true, notes = [], bare = false } = {}) {
    const s = new LayerStack(this.stage, x0);
    if (span) s.span = span;
    const paths = bare ? { through: null, edges: [] } : { through: answer.focus_paths.through, edges: answer.focus_paths.edges };
    s.update({ tokens: answer.tokens, layers: answer.attention.length, ...paths, focus: answer.focus, title, axis, notes: bare ? [] : notes });
    this.objects.push(s);
    return s;
  }

  rolloutScene(a, hidden) {
    this.stack(a.rollout, { bare: hidden });
  }

  flowScene(a) {
    this.stack(a.flow.error ? a.rollout : a.flow);
  }

  offScene(a) {
    if (a.off.error) return;
    const c = a.off.candidates;
    const rows = (list) => [...list].reverse().map((x) => ({ value: x.p, text: `${word(x.token)} ${pct(x.p)}`, key: x.id }));
    const span = { width: 13, height: 5 };
    for (const [x0, list, title] of [[-6, c.before, say("heads.column.before")], [0.5, c.after, say("heads.column.after")]]) {
      const col = new BarColumn(this.stage);
      col.span = span;
      col.update(rows(list), { x0, dy: 0.45, title });
      this.objects.push(col);
    }
  }

  /** The layer stack and, unless `hidden`, beside it each layer's guess as a bar (the first with the answer marked). */
  lensScene(a, hidden) {
    if (a.lens.error) return;
    const tokens = a.lens.tokens;
    const s = new LayerStack(this.stage, -2.5);
    const L = a.lens.layers.length - 1;
    const { dx, dy } = spacing(tokens.length, L);
    s.span = { width: tokens.length * dx + 9, height: L * dy + 2 }; // the stack, the column and its words
    s.update({ tokens, layers: L, focus: a.lens.position });
    this.objects.push(s);
    if (hidden) return;
    const col = new BarColumn(this.stage);
    const rows = a.lens.layers.map((r) => ({ value: r.top[0].p, text: `${r.layer < 0 ? say("lens.emb") : integer(r.layer)}: ${word(r.top[0].token)}`, key: r.top[0].id }));
    const marked = a.lens.layers.findIndex((r) => r.layer === a.lens.first_top);
    col.span = s.span;
    col.update(rows, { x0: -2.5 + s.size.width / 2 + 0.6, dy, marked });
    this.objects.push(col);
  }

  compareScene(a, hidden) {
    const c = a.compare;
    if (c.error) return;
    if (c.mode === "ablation") {
      const bars = new BarGrid(this.stage);
      const { before, after } = c.ablation.weights;
      bars.update(
        [
          { title: c.leftTitle, values: before, rowNames: c.names, colNames: c.names },
          { title: c.rightTitle, values: after, rowNames: c.names, colNames: c.names },
        ],
        { height: 2, max: 1 },
      );
      this.objects.push(bars);
      return;
    }
    const w = Math.max(c.leftAnswer.tokens.length, c.rightAnswer.tokens.length);
    const gap = Math.min(0.9, 13 / w) * w * 0.5 + 2.4;
    const span = { width: 4 * gap, height: 13 };
    this.stack(c.leftAnswer, { x0: -gap, title: c.leftTitle, span, bare: hidden });
    // the biggest changes, named where they happen: under the right stack's input row
    const notes = c.diff && !c.byWord ? c.diff.top.slice(0, 2).map(({ j, d }) => ({ at: j, text: signed(d), cls: `stage-label ls-change ${d >= 0 ? "up" : "down"}` })) : [];
    this.stack(c.rightAnswer, { x0: gap, title: c.rightTitle, span, axis: false, notes, bare: hidden });
  }

  /** The drawing's size in scene units (its objects' own, side by side). */
  extent() {
    let width = 0;
    let height = 0;
    for (const o of this.objects) {
      const s = o.span ?? (o.size?.height !== undefined ? { width: o.size.width, height: o.size.height } : { width: o.size?.width ?? 8, height: o.size?.depth ?? 4 });
      width = Math.max(width, s.width);
      height = Math.max(height, s.height);
    }
    return { width: width || 8, height: height || 4 };
  }

  clearScene() {
    for (const o of this.objects) o.dispose();
    this.objects = [];
    this.stage?.requestRender();
  }

  dispose() {
    this.clearScene();
  }
}
