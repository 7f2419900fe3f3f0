// Chapter `today`: what today's decoders do differently, on SmolLM2-135M: rotary positions (RoPE),
// grouped-query attention (9 query heads reading 3 key/value heads) and the attention sink.
// POST /api/decoder/today.

import { el } from "../dom.js";
import { fixed3 } from "../format.js";
import { pyNum } from "../pycode.js";
import { TodayView } from "../scene/todayview.js";

const f3 = (x) => fixed3(x);
const f4 = (x) => x.toFixed(4);
const spread = (xs) => Math.max(...xs) - Math.min(...xs);

let guesses = {}; // step id → the learner's guess, until the chapter is left

const STEPS = [
  {
    id: "rope",
    title: "RoPE: positions as turns",
    short: "RoPE",
    text: (a) =>
      `Instead of adding a position vector to each token, RoPE turns each pair of a query's (and a key's) numbers ` +
      `by an angle: position × θ^(−2i/64) for pair i. The picture shows one head's first pair (i = 0: one radian ` +
      `per position) for each of the ${a.tokens.length} tokens, grey before the turn and orange after. Because ` +
      `both q and k are turned, their dot product only sees the difference of the two angles: the distance ` +
      `between the tokens. Moving the same query and key together by 0 … 7 places gives the scores ` +
      `${a.shift_scores.map(f3).join(", ")} — the same; putting them 0 … 15 apart gives scores that change ` +
      `(from ${f3(Math.min(...a.distance_scores))} to ${f3(Math.max(...a.distance_scores))}).`,
  },
  {
    id: "gqa",
    title: "GQA: 9 query heads read 3 KV heads",
    short: "GQA",
    text: (a) =>
      `Each layer has ${a.groups.flat().length} query heads but only ${a.groups.length} key/value heads: query heads ` +
      `${a.groups.map((g) => `${g[0]}–${g[g.length - 1]}`).join(", ")} share KV heads 0, 1, 2. Head ${a.head} reads KV ` +
      `head ${a.kv_head}. The queries stay different, so the heads still look for different things, but the cache ` +
      `keeps 3 heads' keys and values instead of 9: ${a.cache_bytes_per_token.toLocaleString("en")} bytes per token ` +
      `instead of ${a.cache_bytes_per_token_mha.toLocaleString("en")}, a third.`,
  },
  {
    id: "sink",
    title: "The attention sink",
    short: "sink",
    text: (a) =>
      `Averaged over all 30 layers and 9 heads, the queries of “${a.tokens.join("")}” give ` +
      `${(100 * a.sink).toFixed(0)}% of their weight to token 0 (“${a.tokens[0]}”), whatever it means. Each bar is one ` +
      `layer. Softmax must give away a total of 1, and a head that finds nothing useful parks its weight on the ` +
      `first token, which every query can see; its value is small, so parking there changes little. Models that ` +
      `drop the first token from their cache fall apart, which is how this was found (Xiao et al., 2024).`,
  },
];

const QUESTIONS = {
  rope: ["The same query and key, moved together 5 places later: does their score change?", ["it stays the same", "it changes"], 0],
  gqa: ["With 3 KV heads instead of 9, the KV cache is…", ["a third", "the same", "three times"], 0],
  sink: ["Which token gets the most weight, over all layers and heads?", ["the first token", "the word itself", "the previous word"], 0],
};

class TodayPanel {
  constructor(ctx) {
    this.ctx = ctx;
    this.scene = ctx.stage ? new TodayView(ctx.stage) : null;
    const form = el("form", { className: "ca-form", dataset: { testid: "today-form" } });
    const box = el("input", { type: "text", maxlength: "2000", "aria-label": "sentence", dataset: { testid: "today-sentence" } });
    box.value = ctx.params.sentence;
    form.append(el("label", { className: "ca-label" }, "Sentence"), box, el("button", { type: "submit" }, "Read"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      ctx.setParams({ sentence: box.value });
    });
    const heads = el("div", { className: "ca-choices", dataset: { testid: "today-heads" } });
    this.heads = heads;
    this.question = el("div", { dataset: { testid: "today-question" } });
    ctx.panel.append(form, heads, this.question);
  }

  set(a, stepId) {
    this.answer = a;
    this.stepId = stepId;
    this.drawHeads(a);
    this.drawQuestion(stepId);
    this.scene?.update(a, stepId);
  }

  /** The head picker, the query heads grouped by the KV head they read. */
  drawHeads(a) {
    this.heads.textContent = "";
    a.groups.forEach((group, j) => {
      const g = el("span", { className: "ca-choices", dataset: { testid: `today-group-${j}` } });
      g.append(el("span", { className: "ca-note" }, `KV ${j}:`));
      for (const h of group) {
        const b = el("button", { type: "button", "aria-pressed": String(h === a.head), dataset: { testid: `today-head-${h}` } }, `q${h}`);
        b.addEventListener("click", () => this.ctx.setParams({ head: String(h) }));
        g.append(b);
      }
      this.heads.append(g);
    });
  }

  drawQuestion(stepId) {
    this.question.textContent = "";
    const [ask, options, right] = QUESTIONS[stepId];
    this.question.append(el("p", { className: "ca-label" }, ask));
    const row = el("div", { className: "ca-choices" });
    options.forEach((o, i) => {
      const b = el("button", { type: "button", dataset: { testid: "today-guess" } }, o);
      b.addEventListener("click", () => {
        guesses[stepId] = i;
        this.drawQuestion(stepId);
      });
      row.append(b);
    });
    this.question.append(row);
    if (guesses[stepId] !== undefined) {
      const ok = guesses[stepId] === right;
      this.question.append(el("p", { className: "ca-note", dataset: { testid: "today-verdict" } }, `${ok ? "Right" : "Not quite"}: ${options[right]}. The numbers below show why.`));
    }
  }

  dispose() {
    this.scene?.dispose();
    guesses = {};
  }
}

export default {
  id: "today",
  title: "Attention in today's models",
  summary: "Rotary positions, grouped-query heads and the attention sink, on a real decoder.",
  params: { sentence: "The cat ate its fish because it was hungry.", layer: "3", head: "4" },
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/decoder/today", { sentence: ctx.params.sentence, layer: Number(ctx.params.layer), head: Number(ctx.params.head) });
  },

  mount(ctx) {
    const panel = new TodayPanel(ctx);
    return {
      update: (a, stepId) => panel.set(a, stepId),
      dispose: () => panel.dispose(),
    };
  },

  numbers: (a, stepId) => {
    if (stepId === "rope") {
      return [
        { label: "scores moved together (spread)", value: f4(spread(a.shift_scores)), testid: "today-shift-spread" },
        { label: "scores put apart (spread)", value: f4(spread(a.distance_scores)), testid: "today-distance-spread" },
      ];
    }
    if (stepId === "gqa") {
      return [
        { label: "head → KV head", value: `${a.head} → ${a.kv_head}`, testid: "today-kv-head" },
        { label: "cache per token (GQA)", value: `${a.cache_bytes_per_token} B`, testid: "today-bytes" },
        { label: "cache per token (9 KV heads)", value: `${a.cache_bytes_per_token_mha} B`, testid: "today-bytes-mha" },
      ];
    }
    return [{ label: "mean weight on token 0", value: f3(a.sink), testid: "today-sink" }];
  },

  code: (a) =>
    [
      "import json",
      "import numpy as np",
      "",
      "# RoPE turns pair (i, i + d/2) of a vector by position × θ^(−2i/d); SmolLM2: d = 64, θ = 100,000",
      "d, theta = 64, 100_000.0",
      "def rope(x, pos):",
      "    angle = pos * theta ** (-np.arange(0, d, 2) / d)",
      "    c, s = np.cos(angle), np.sin(angle)",
      "    a, b = x[: d // 2], x[d // 2 :]",
      "    return np.concatenate([a * c - b * s, b * c + a * s])",
      "rng = np.random.default_rng(0)",
      "q, k = rng.standard_normal(d), rng.standard_normal(d)",
      `gap = ${pyNum(a.tokens.length - 1)}`,
      "moved = [float(rope(q, gap + t) @ rope(k, t)) for t in range(8)]  # the same distance, moved along",
      "apart = [float(rope(q, t) @ rope(k, 0)) for t in range(16)]  # further and further apart",
      "# GQA: the KV cache of 30 layers × (k, v) × KV heads × 64 numbers × 4 bytes, per token",
      "per_token = {kv: 30 * 2 * kv * 64 * 4 for kv in (3, 9)}",
      "print(json.dumps({",
      '    "moved_spread": max(moved) - min(moved),',
      '    "apart_spread": max(apart) - min(apart),',
      '    "gqa_bytes": per_token[3],',
      '    "mha_bytes": per_token[9],',
      "}))",
    ].join("\n"),
};
