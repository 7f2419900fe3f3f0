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
// write/answers.js.

import { pyNum, pyStr } from "../pycode.js";
import { decoderInfo, keepAnswer, keptAnswer } from "../write/answers.js";
import { WritePanel } from "../write/panel.js";
import { MAX_TOKENS, atOf, int, requestOf, settingsOf, shownOf } from "../write/params.js";
import { cacheBytes, megabytes, visible } from "../write/sampling.js";

const STEPS = [
  {
    id: "write",
    title: "A decoder writes one token at a time",
    short: "write",
    figure: "[data-testid=write-text], [data-testid=write-cands]",
    ask: {
      q: "To write ten tokens, how many times does the model run?",
      options: ["once", "ten times", "a hundred times"],
      answer: 1,
      why: () =>
        "One run gives only the next token. It is stuck on the end of the text, and the model runs again on the longer " +
        "text: once per new token, so ten runs for ten tokens.",
    },
    text: (a) =>
      `This is SmolLM2, a small real language model (${a.info.layers} layers, ${a.info.heads} heads). Type the start of a text ` +
      `and press Write. The model reads everything so far and gives every possible next token a probability; ` +
      `one of them is chosen and stuck on the end. ` +
      (a.tokens.length
        ? `It has written ${a.tokens.length} tokens; click one to see how it was chosen.`
        : a.next
          ? `It has read the prompt: ${a.prompt_tokens.length} tokens, one row each in the cache (the 3D view); the bars are its ` +
            `ten likeliest next tokens. Nothing is written yet.`
          : "Nothing is written yet."),
  },
  {
    id: "causal",
    title: "Causal attention in a decoder",
    short: "causal",
    figure: "#chapter-stage",
    ask: {
      q: "Can the newest token's query look at a token that comes after it?",
      options: ["yes", "no"],
      answer: 1,
      why: () =>
        "There is nothing after it to look at: when a token is chosen, the tokens after it don't exist yet. " +
        "In a decoder the causal mask is simply the cache itself.",
    },
    text: (a, ctx) => {
      const shown = shownOf(a, ctx.params);
      if (!shown) return "Write something first: then the 3D view shows the newest token's query (orange) reaching back into the keys of every token before it.";
      const { t, cache, next } = shown;
      const choosing = next
        ? `To choose the first token after the prompt, the query of its last token (“${visible(cache[cache.length - 1])}”, orange)`
        : `To choose token ${atOf(a, ctx.params) + 1} (“${visible(t.token)}”), the query of the newest token (orange)`;
      return (
        `${choosing} reaches back to the keys of all ${t.kv_len} tokens read so far; a thicker line means more attention. ` +
        `Where could it look besides?`
      );
    },
  },
  {
    id: "cache",
    title: "The KV cache: what each new token costs",
    short: "cache",
    figure: "#chapter-stage",
    ask: {
      q: "When token 100 is written, do the keys of the first 99 tokens need computing again?",
      options: ["yes, all of them", "no, they are kept"],
      answer: 1,
      why: () =>
        "A token's key and value never change once computed, because it can't see the tokens after it. So the model " +
        "keeps them: that is the KV cache. Without it, step t would redo all t tokens against each other, about t² of work.",
    },
    text: (a, ctx) => {
      const at = Math.max(0, atOf(a, ctx.params));
      const kv = a.tokens.length ? a.tokens[at].kv_len : (a.prompt_tokens?.length ?? 0);
      return (
        `The 3D view shows the KV cache: one row of keys (blue) and one of values (green) per token read so far, ${kv} rows ` +
        `now. Each new token computes its own q, k and v, adds its k and v as a new row, then compares its q with the t keys ` +
        `in the cache: t dot products.`
      );
    },
  },
  {
    id: "size",
    title: "How big the cache gets",
    short: "size",
    figure: "[data-testid=write-size]",
    ask: {
      q: "For 8,192 tokens, is this small model's cache closer to 4 MB, 40 MB or 400 MB?",
      options: ["4 MB", "40 MB", "400 MB"],
      answer: 2,
      why: (a) => {
        const per = cacheBytes({ layers: a.info.layers, kvHeads: a.info.kv_heads, d: a.info.d_k, bytes: 4, tokens: 1 });
        return `${per.toLocaleString("en")} bytes × 8,192 tokens = ${megabytes(per * 8192)} at 4 bytes a number: the table's last row.`;
      },
    },
    text: (a) => {
      const per = cacheBytes({ layers: a.info.layers, kvHeads: a.info.kv_heads, d: a.info.d_k, bytes: 4, tokens: 1 });
      return (
        `Each token keeps a key and a value (2) in each of ${a.info.layers} layers, for each of ${a.info.kv_heads} KV heads, ` +
        `${a.info.d_k} numbers each, 4 bytes per number here: 2 × ${a.info.layers} × ${a.info.kv_heads} × ${a.info.d_k} × 4 = ` +
        `${per.toLocaleString("en")} bytes per token, and memory grows with every token written. Guess below: then the ` +
        `table multiplies it out.`
      );
    },
  },
  {
    id: "candidates",
    title: "The next-token candidates",
    short: "candidates",
    figure: "[data-testid=write-cands]",
    ask: {
      q: "With temperature 0, which candidate gets written?",
      options: ["a random one", "the likeliest", "the shortest"],
      answer: 1,
      why: () =>
        "Temperature 0 always takes the top candidate (greedy), so the same prompt writes the same text every time. " +
        "Set the temperature to 0 and watch the orange bars: one of them takes it all.",
    },
    text: (a, ctx) =>
      shownOf(a, ctx.params)
        ? `The grey bar is the model's probability for each of its ten likeliest next tokens. The orange bar is the chance of ` +
          `being picked: a higher temperature flattens the chances, a lower one sharpens them; top-k keeps only the k likeliest; ` +
          `top-p keeps the likeliest until their chances add up to p. Move the sliders: the orange bars follow (among these ten).`
        : `Write something first: then a grey bar shows the model's probability for each of its ten likeliest next tokens, and ` +
          `an orange bar the chance of being picked under the temperature, top-k and top-p set below.`,
  },
];

export default {
  id: "writing",
  title: "Writing one token at a time",
  summary: "A real decoder (SmolLM2) writes token by token: causal attention, the KV cache, next-token candidates.",
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
      const { t, next } = shown;
      const chosen = t.candidates.find((c) => c.id === t.id)?.p.toFixed(3) ?? "—";
      out.push({ label: "tokens in the cache", value: String(t.kv_len), testid: "write-kv-len" });
      out.push({ label: "attention on token 0", value: t.attention[0].toFixed(3), testid: "write-sink-weight" });
      out.push({ label: next ? "the next token's probability" : "chosen token's probability", value: chosen, testid: "write-chosen-p" });
    }
    const per = cacheBytes({ layers: a.info.layers, kvHeads: a.info.kv_heads, d: a.info.d_k, bytes: 4, tokens: 1 });
    out.push({ label: "cache bytes per token (float32)", value: per.toLocaleString("en"), testid: "write-bytes-per-token" });
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

