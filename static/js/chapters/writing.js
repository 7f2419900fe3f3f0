// Chapter `writing` (10): a real decoder, SmolLM2-135M, writes one token at a time — and this
// chapter is the page's Write mode. Type a prompt, press Write (the tokens stream in as the
// server writes them: POST /api/generate, NDJSON) or One token; step through the written tokens;
// the 3D view shows the KV cache (a row of keys and of values per token read) and the newest
// token's query reaching back into it; the ten likeliest next tokens as bars, redrawn live for
// temperature, top-k and top-p. Everything a student sees is in `params`, so a classroom's
// followers (and a reload) write the same tokens again: greedy, or sampled with a fixed draw.
// Before anything is written the chapter still shows the model at work: the prompt it has read
// (its tokens, the cache's rows) and the token it would write next (its query, the candidates).
//
// This file is the chapter: its steps, load, numbers and code. The panel is write/panel.js, the
// stream write/stream.js, the parameters as numbers write/params.js, what is kept between loads
// write/answers.js. Its words are in the catalogs (chapter.writing.…; the panel's write.…), read when
// drawn (chapters/CONTRACT.md); the prompt and the written tokens are the model's (English), as typed.

import { fixed3 } from "../format.js";
import { grouped, integer, t } from "../i18n.js";
import { pyNum, pyStr } from "../pycode.js";
import { decoderInfo, keepAnswer, keptAnswer } from "../write/answers.js";
import { WritePanel, sizeOf } from "../write/panel.js";
import { MAX_TOKENS, atOf, int, requestOf, settingsOf, shownOf } from "../write/params.js";
import { cacheBytes, visible } from "../write/sampling.js";
import { quote, unbroken } from "./widgets.js";

/** This chapter's message `key` (chapter.writing.<key>) with `values`. */
const say = (key, values) => t(`chapter.writing.${key}`, values);

/** Bytes of one token's cache, at 4 bytes a number. */
const perToken = (info) => cacheBytes({ layers: info.layers, kvHeads: info.kv_heads, d: info.d_k, bytes: 4, tokens: 1 });

/**
 * Step `id` of this chapter: its title, short name and Predict question (`options` answers, the
 * right one `answer`; `values` fill the question) read from the catalogs when drawn.
 */
function step(id, { figure, options, answer, values, text }) {
  return {
    id,
    figure,
    get title() {
      return say(`${id}.title`);
    },
    get short() {
      return say(`${id}.short`);
    },
    ask: {
      get q() {
        return say(`${id}.q`, values?.());
      },
      get options() {
        return Array.from({ length: options }, (_, i) => say(`${id}.o${i}`));
      },
      answer,
      why: (a) => say(`${id}.why`, values?.(a)),
    },
    text,
  };
}

/** What the first step says of the writing so far: the tokens written, or the prompt read, or nothing yet. */
function soFar(a) {
  if (a.tokens.length) return say("write.written", { written: a.tokens.length });
  if (a.next) return say("write.read", { n: a.prompt_tokens.length });
  return say("write.none");
}

const STEPS = [
  step("write", {
    figure: "[data-testid=write-text], [data-testid=write-cands]",
    options: 3,
    answer: 1,
    text: (a) => `${say("write.text", { layers: a.info.layers, heads: a.info.heads })} ${soFar(a)}`,
  }),
  step("causal", {
    figure: "#chapter-stage",
    options: 2,
    answer: 1,
    text: (a, ctx) => {
      const shown = shownOf(a, ctx.params);
      if (!shown) return say("causal.none");
      const { t: tok, cache, next } = shown;
      if (next) return say("causal.next", { token: quote(visible(cache[cache.length - 1])), n: tok.kv_len });
      return say("causal.text", { i: atOf(a, ctx.params) + 1, token: quote(visible(tok.token)), n: tok.kv_len });
    },
  }),
  step("cache", {
    figure: "#chapter-stage",
    options: 2,
    answer: 1,
    text: (a, ctx) => {
      const at = Math.max(0, atOf(a, ctx.params));
      const kv = a.tokens.length ? a.tokens[at].kv_len : (a.prompt_tokens?.length ?? 0);
      return say("cache.text", { kv });
    },
  }),
  step("size", {
    figure: "[data-testid=write-size]",
    options: 3,
    answer: 2,
    // the question's 8,192 tokens; the answer also says what they take at 4 bytes a number
    values: (a) => ({ tokens: 8192, ...(a ? { per: perToken(a.info), mb: sizeOf(perToken(a.info) * 8192) } : {}) }),
    text: (a) => {
      const i = a.info;
      const formula = unbroken(`2 × ${integer(i.layers)} × ${integer(i.kv_heads)} × ${integer(i.d_k)} × 4 = ${grouped(perToken(i))}`);
      return say("size.text", { layers: i.layers, kv: i.kv_heads, d: i.d_k, formula });
    },
  }),
  step("candidates", {
    figure: "[data-testid=write-cands]",
    options: 3,
    answer: 1,
    text: (a, ctx) => (shownOf(a, ctx.params) ? say("candidates.text") : say("candidates.none")),
  }),
];

export default {
  id: "writing",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { prompt: "The capital of France is", n: "0", at: "", used: "0,0,1", temp: "0", topk: "0", topp: "1", layer: "5", head: "0", live: "" },
  controls: [],
  steps: STEPS,

  async load(ctx) {
    const info = await decoderInfo();
    const n = Math.min(MAX_TOKENS, int(ctx.params.n, 0));
    if (keptAnswer(ctx.params)) return keptAnswer(ctx.params);
    if (n) {
      keepAnswer(ctx.params, { ...(await ctx.post("/api/generate", requestOf(ctx.params, n))), info });
      return keptAnswer(ctx.params);
    }
    // nothing written yet: the model reads the prompt and picks the first token (shown, not written)
    try {
      const read = await ctx.post("/api/generate", requestOf(ctx.params, 1));
      keepAnswer(ctx.params, { info, prompt_tokens: read.prompt_tokens, tokens: [], next: read.tokens[0] });
      return keptAnswer(ctx.params);
    } catch (err) {
      if (err?.name === "AbortError") throw err;
      return { info, prompt_tokens: null, tokens: [] }; // a prompt it cannot read: Write says why
    }
  },

  mount(ctx) {
    return new WritePanel(ctx, STEPS);
  },

  numbers(a, stepId, ctx) {
    const shown = shownOf(a, ctx.params);
    const out = [];
    if (shown && !ctx.withheld) {
      const { t: tok, next } = shown;
      const chosen = tok.candidates.find((c) => c.id === tok.id);
      out.push({ label: say("number.kvLen"), value: integer(tok.kv_len), testid: "write-kv-len" });
      out.push({ label: say("number.sink"), value: fixed3(tok.attention[0]), testid: "write-sink-weight" });
      out.push({ label: say(next ? "number.next" : "number.chosen"), value: chosen ? fixed3(chosen.p) : "—", testid: "write-chosen-p" });
    }
    out.push({ label: say("number.perToken"), value: grouped(perToken(a.info)), testid: "write-bytes-per-token" });
    return out;
  },

  code(a, stepId, ctx) {
    const i = a.info;
    if (stepId === "size") {
      return [
        "import json",
        "import numpy as np",
        "",
        `layers, kv_heads, d = ${i.layers}, ${i.kv_heads}, ${i.d_k}  # SmolLM2-135M`,
        "# one token's cache in one layer: a key and a value per KV head, as float32 numbers",
        "k = np.zeros((kv_heads, d), dtype=np.float32)",
        "v = np.zeros((kv_heads, d), dtype=np.float32)",
        "per_token = layers * (k.nbytes + v.nbytes)  # = 2 * layers * kv_heads * d * 4",
        "sizes = {f'float32 {n}': per_token * n for n in (1024, 8192)}",
        "sizes.update({f'float16 {n}': per_token // 2 * n for n in (1024, 8192)})",
        "print(json.dumps(sizes))",
      ].join("\n");
    }
    const shown = shownOf(a, ctx.params);
    if (!shown || ctx.withheld) return "# Write something first: the code then checks the written token's numbers.";
    const { t, cache } = shown;
    const s = settingsOf(ctx.params);
    return [
      "import json",
      "import numpy as np",
      "",
      `# the ten likeliest next tokens after ${pyStr(cache.join("").slice(-60))} (from the server)`,
      `logits = np.array([${t.candidates.map((c) => pyNum(c.logit)).join(", ")}])`,
      `temperature, top_k, top_p = ${pyNum(s.temperature)}, ${s.topK}, ${pyNum(s.topP)}`,
      "if temperature == 0:",
      "    chance = (np.arange(len(logits)) == 0).astype(float)  # greedy: the likeliest",
      "else:",
      "    keep = top_k if top_k > 0 else len(logits)",
      "    w = np.exp((logits - logits[:keep].max()) / temperature)",
      "    w[keep:] = 0",
      "    chance = w / w.sum()",
      "    if top_p < 1:",
      "        before = np.concatenate([[0.0], np.cumsum(chance)[:-1]])",
      "        chance = np.where(before < top_p, chance, 0)",
      "        chance /= chance.sum()",
      "print(json.dumps([round(float(c), 6) for c in chance]))",
    ].join("\n");
  },
};

