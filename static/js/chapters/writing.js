// Chapter `writing` (10): a real decoder, SmolLM2-135M, writes one token at a time — and this
// chapter is the page's Write mode. Type a prompt, press Write (the tokens stream in as the
// server writes them: POST /api/generate, NDJSON) or One token; step through the written tokens;
// the 3D view shows the KV cache (a row of keys and of values per token read) and the newest
// token's query reaching back into it; the ten likeliest next tokens as bars, redrawn live for
// temperature, top-k and top-p. Everything a student sees is in `params`, so a classroom's
// followers (and a reload) write the same tokens again: greedy, or sampled with a fixed draw.

import { ApiError } from "../api.js";
import { el } from "../dom.js";
import { pyNum, pyStr } from "../pycode.js";
import { CacheScene } from "../write/cachescene.js";
import { decodeLive, encodeLive } from "../write/live.js";
import { cacheBytes, chances, headGroups, megabytes, readLines } from "../write/sampling.js";
import { predictBox } from "./widgets.js";

export const DECODER = "smollm2-135m";
const MAX_TOKENS = 64;
const DRAW = 7; // the fixed random draw of a sampled write, so every page writes the same tokens
const answers = new Map(); // written answers by what was asked (a stream's answer is reused by load)

const int = (s, d) => (Number.isInteger(Number(s)) && String(s).trim() !== "" ? Number(s) : d);
const num = (s, d) => (Number.isFinite(Number(s)) && String(s).trim() !== "" ? Number(s) : d);
const show = (t) => t.replace(/\n/g, "↵").replace(/\t/g, "⇥") || "∅";
const pct = (p) => `${(100 * p).toFixed(1)}%`;

/** temperature, top-k and top-p of a params object ("used" = the ones the written tokens were drawn with). */
export function settingsOf(params, used = false) {
  if (used) {
    const [t, k, p] = String(params.used || "0,0,1").split(",");
    return { temperature: num(t, 0), topK: int(k, 0), topP: num(p, 1) };
  }
  return { temperature: num(params.temp, 0), topK: int(params.topk, 0), topP: num(params.topp, 1) };
}

/**
 * Following a writing token by token (a classroom's followers): the page that writes tells each
 * line of its stream with a DOM event on window, and a page that follows hands the lines it gets
 * to its Write chapter with another; the follower then draws every token as it comes, without
 * asking the server, and keeps the whole answer for the snapshot that ends the writing.
 *
 *   "write:token"  (sent)      detail { request, line }: request = the POST /api/generate body,
 *                              line = one line of its stream as received (see docs/decoder.md);
 *                              the last has line.done (reason, seconds, written)
 *   "write:follow" (listened)  detail { request, line }: the same, on a following page
 */
export const TOKEN_EVENT = "write:token";
export const FOLLOW_EVENT = "write:follow";

/** The chapter parameters under which a written answer of `request` (n tokens) is kept. */
function paramsOfRequest(request, n) {
  const used = `${request.temperature},${request.top_k},${request.top_p}`;
  return { prompt: request.prompt, n: String(n), used, layer: String(request.layer), head: String(request.head) };
}

function keyOf(params) {
  return JSON.stringify([params.prompt, int(params.n, 0), params.used, int(params.layer, 5), int(params.head, 0)]);
}

function requestOf(params, n) {
  const s = settingsOf(params, true);
  return {
    model: DECODER,
    prompt: params.prompt,
    max_new_tokens: n,
    temperature: s.temperature,
    top_k: s.topK,
    top_p: s.topP,
    seed: DRAW,
    layer: int(params.layer, 5),
    head: int(params.head, 0),
  };
}

const known = { info: null, at: 0 }; // the decoder's entry once loaded, and when it was asked for
const KNOWN_MS = 10_000; // a loaded decoder's facts are asked again after this (not on every token followed)

/** The decoder's entry of GET /api/models (layers, heads, kv_heads, d_k, loaded). */
async function decoderInfo(get) {
  if (known.info && performance.now() - known.at < KNOWN_MS) return known.info;
  const all = await get("/api/models");
  const info = all.models.find((m) => m.id === DECODER);
  if (!info) throw new ApiError(503, [{ field: "model", msg: "this server has no decoder model" }]);
  if (info.loaded) Object.assign(known, { info, at: performance.now() }); // loading: ask again next time
  return info;
}

/** The written token shown now: params.at, else the last. */
function atOf(answer, params) {
  const n = answer.tokens.length;
  if (!n) return -1;
  const at = int(params.at, n - 1);
  return Math.max(0, Math.min(n - 1, at));
}

/** The tokens in the cache when token `at` was chosen: the prompt and the tokens written before it. */
export function cacheTokens(answer, at) {
  return [...answer.prompt_tokens, ...answer.tokens.slice(0, at).map((t) => t.token)];
}

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
      (a.tokens.length ? `It has written ${a.tokens.length} tokens; click one to see how it was chosen.` : "Nothing is written yet."),
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
      const at = atOf(a, ctx.params);
      if (at < 0) return "Write something first: then the 3D view shows the newest token's query (orange) reaching back into the keys of every token before it.";
      const t = a.tokens[at];
      return (
        `To choose token ${at + 1} (“${show(t.token)}”), the query of the newest token (orange) reaches back to the keys of all ` +
        `${t.kv_len} tokens read so far; a thicker line means more attention. Where could it look besides?`
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
    text: () =>
      `The grey bar is the model's probability for each of its ten likeliest next tokens. The orange bar is the chance of ` +
      `being picked: a higher temperature flattens the chances, a lower one sharpens them; top-k keeps only the k likeliest; ` +
      `top-p keeps the likeliest until their chances add up to p. Move the sliders: the orange bars follow (among these ten).`,
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
    const info = await decoderInfo(ctx.get);
    const n = Math.min(MAX_TOKENS, int(ctx.params.n, 0));
    if (!n) return { info, prompt_tokens: null, tokens: [] };
    const key = keyOf(ctx.params);
    if (!answers.has(key)) answers.set(key, { ...(await ctx.post("/api/generate", requestOf(ctx.params, n))), info });
    return answers.get(key);
  },

  mount(ctx) {
    return new WritePanel(ctx);
  },

  numbers(a, stepId, ctx) {
    const at = atOf(a, ctx.params);
    const out = [];
    if (at >= 0 && !ctx.withheld) {
      const t = a.tokens[at];
      out.push({ label: "tokens in the cache", value: String(t.kv_len), testid: "write-kv-len" });
      out.push({ label: "attention on token 0", value: t.attention[0].toFixed(3), testid: "write-sink-weight" });
      out.push({ label: "chosen token's probability", value: t.candidates.find((c) => c.id === t.id)?.p.toFixed(3) ?? "—", testid: "write-chosen-p" });
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
    const at = atOf(a, ctx.params);
    if (at < 0 || ctx.withheld) return "# Write something first: the code then checks the written token's numbers.";
    const t = a.tokens[at];
    const s = settingsOf(ctx.params);
    return [
      "import json",
      "import numpy as np",
      "",
      `# the ten likeliest next tokens after ${pyStr(cacheTokens(a, at).join("").slice(-60))} (from the server)`,
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

/** The Write panel and the 3D cache: built once per visit, redrawn by update(). */
class WritePanel {
  constructor(ctx) {
    this.ctx = ctx;
    this.answer = null;
    this.live = null; // the answer being streamed
    this.controller = null;
    this.scene = ctx.stage ? new CacheScene(ctx.stage) : null;
    const p = ctx.panel;
    p.classList.add("wr-panel");
    this.ask = el("div", { className: "wr-ask", dataset: { testid: "write-ask" } });
    this.status = el("p", { className: "wr-status", role: "status", dataset: { testid: "write-status" } });
    const form = el("form", { className: "wr-form", dataset: { testid: "write-form" } });
    this.prompt = el("input", { type: "text", maxlength: "2000", "aria-label": "Prompt: the start of a text", dataset: { testid: "write-prompt" } });
    this.count = el("input", { type: "number", min: "1", max: String(MAX_TOKENS), value: "16", "aria-label": "tokens to write", dataset: { testid: "write-count" } });
    this.go = el("button", { type: "submit", dataset: { testid: "write-go" } }, "Write");
    this.one = el("button", { type: "button", dataset: { testid: "write-one" } }, "One token");
    this.stop = el("button", { type: "button", dataset: { testid: "write-stop" }, disabled: "" }, "Stop");
    form.append(this.prompt, el("span", { className: "wr-buttons" }), this.go, this.count, this.one, this.stop);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.write(Math.min(MAX_TOKENS, Math.max(1, int(this.count.value, 16))), true);
    });
    this.one.addEventListener("click", () => this.write(Math.min(MAX_TOKENS, int(ctx.params.n, 0) + 1), ctx.params.prompt !== this.prompt.value));
    this.stop.addEventListener("click", () => this.controller?.abort());

    const nav = el("div", { className: "wr-nav" });
    this.back = el("button", { type: "button", "aria-label": "previous written token", dataset: { testid: "write-prev" } }, "‹");
    this.fwd = el("button", { type: "button", "aria-label": "next written token", dataset: { testid: "write-next" } }, "›");
    this.text = el("p", { className: "wr-text", dataset: { testid: "write-text" } });
    nav.append(this.back, this.text, this.fwd);
    this.back.addEventListener("click", () => this.goTo(this.at() - 1));
    this.fwd.addEventListener("click", () => this.goTo(this.at() + 1));

    this.cands = el("ol", { className: "wr-cands", dataset: { testid: "write-cands" }, "aria-label": "The ten likeliest next tokens" });
    this.size = el("table", { className: "wr-size", dataset: { testid: "write-size" } });

    const knobs = el("div", { className: "wr-knobs" });
    this.temp = el("input", { type: "range", min: "0", max: "2", step: "0.1", "aria-label": "temperature", dataset: { testid: "write-temp" } });
    this.topk = el("input", { type: "number", min: "0", max: "10", step: "1", "aria-label": "top-k (0: all ten)", dataset: { testid: "write-topk" } });
    this.topp = el("input", { type: "range", min: "0.05", max: "1", step: "0.05", "aria-label": "top-p", dataset: { testid: "write-topp" } });
    this.knobText = el("span", { className: "wr-knob-text", dataset: { testid: "write-knobs" } });
    knobs.append(el("label", {}, "temperature "), this.temp, el("label", {}, " top-k "), this.topk, el("label", {}, " top-p "), this.topp, this.knobText);
    for (const input of [this.temp, this.topk, this.topp]) {
      input.addEventListener("input", () => this.drawBars());
      input.addEventListener("change", () => ctx.setParams({ temp: this.temp.value, topk: String(int(this.topk.value, 0)), topp: this.topp.value }));
    }

    const picks = el("div", { className: "wr-picks" });
    this.layer = el("select", { "aria-label": "layer", dataset: { testid: "write-layer" } });
    this.head = el("select", { "aria-label": "query head, grouped by the KV head it reads", dataset: { testid: "write-head" } });
    picks.append(el("label", {}, "Layer "), this.layer, el("label", {}, " Head "), this.head);
    this.layer.addEventListener("change", () => ctx.setParams({ layer: this.layer.value }));
    this.head.addEventListener("change", () => ctx.setParams({ head: this.head.value }));

    this.cacheTitle = el("p", { className: "wr-cache-title" });
    this.cache = el("ol", { className: "wr-cache", dataset: { testid: "write-cache" }, "aria-label": "The KV cache: one row per token read, with the attention of the newest query" });
    this.sinkNote = el("p", { className: "wr-sink", dataset: { testid: "write-sink" } });
    p.append(this.ask, this.status, form, nav, this.cands, knobs, picks, this.size, this.cacheTitle, this.cache, this.sinkNote);
    this.prompt.value = ctx.params.prompt;
    this.askedStep = null;
    this.followed = null; // { key, live } of a writing followed token by token
    this.onFollow = (e) => this.follow(e.detail ?? {});
    window.addEventListener(FOLLOW_EVENT, this.onFollow);
    this.status.textContent = "Getting the decoder ready (the very first time it unpacks its weights: up to half a minute)…";
  }

  at() {
    return this.answer ? atOf(this.answer, this.ctx.params) : -1;
  }

  goTo(i) {
    const n = this.answer?.tokens.length ?? 0;
    if (!n || this.live) return;
    this.ctx.setParams({ at: String(Math.max(0, Math.min(n - 1, i))) });
  }

  /** Stream `n` new tokens after the prompt (again from the start: the same settings write the same tokens). */
  async write(n, fresh) {
    this.controller?.abort();
    const ctx = this.ctx;
    const used = fresh || !int(ctx.params.n, 0) ? `${num(this.temp.value, 0)},${int(this.topk.value, 0)},${num(this.topp.value, 1)}` : ctx.params.used;
    const params = { ...ctx.params, prompt: this.prompt.value, used };
    if (!params.prompt.trim()) {
      this.status.textContent = "Type the start of a text first: the model goes on from it.";
      return;
    }
    const controller = new AbortController();
    this.controller = controller;
    const live = { info: this.answer.info, prompt_tokens: null, tokens: [] };
    this.live = live;
    const request = requestOf(params, n);
    this.busy(true);
    const started = performance.now();
    this.status.textContent = this.answer.info.loaded ? "Writing…" : "Loading the decoder's weights (the first time takes a few seconds)…";
    const tick = setInterval(() => {
      if (!live.prompt_tokens) this.status.textContent = `Loading the decoder's weights… ${((performance.now() - started) / 1000).toFixed(0)} s`;
    }, 1000);
    let reason = "stopped";
    try {
      const res = await fetch("/api/generate", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/x-ndjson" },
        body: JSON.stringify(request),
        signal: controller.signal,
      });
      if (!res.ok) {
        const body = await res.json().catch(() => null);
        const msg = body?.errors?.[0]?.msg ?? body?.detail?.[0]?.msg ?? `the server answered ${res.status}`;
        throw new Error(msg);
      }
      await readLines(res.body, (line) => {
        if (line.done) {
          window.dispatchEvent(new CustomEvent(TOKEN_EVENT, { detail: { request, line } }));
          reason = line.reason;
          live.cache_bytes = line.cache_bytes;
          live.seconds = line.seconds;
          return;
        }
        if (line.prompt_tokens) live.prompt_tokens = line.prompt_tokens;
        live.tokens.push(line);
        window.dispatchEvent(new CustomEvent(TOKEN_EVENT, { detail: { request, line } }));
        this.status.textContent = `Writing… ${live.tokens.length} of ${n}`;
        this.draw(live, live.tokens.length - 1);
        // a classroom's followers see each token as it comes (write/live.js): no model runs for them
        ctx.setParams({ live: encodeLive(live.tokens, params.prompt, live.prompt_tokens?.length ?? 0) });
      });
    } catch (err) {
      if (err.name !== "AbortError") {
        this.status.textContent = `Could not write: ${err.message}`;
        reason = "error";
      }
    } finally {
      clearInterval(tick);
      if (this.controller === controller) this.controller = null;
    }
    if (this.live !== live) return; // a newer write took over
    this.live = null;
    this.busy(false);
    const written = live.tokens.length;
    if (!written) {
      if (ctx.params.live) await ctx.setParams({ live: "" });
      this.draw(this.answer, this.at());
      return;
    }
    this.status.textContent = reason === "eos" ? `Wrote ${written} tokens, then the model ended the text.` : reason === "stopped" ? `Stopped after ${written} tokens.` : `Wrote ${written} tokens.`;
    const next = { ...params, n: String(written), at: String(written - 1) };
    answers.set(keyOf(next), live);
    await ctx.setParams({ prompt: next.prompt, used, n: next.n, at: next.at, live: "" });
  }

  /**
   * One line of a writing done on another page (FOLLOW_EVENT): drawn as if streamed here; the last
   * keeps the whole answer under the parameters the writer's snapshot will name (no request then).
   */
  follow({ request, line }) {
    if (!request || !line || this.controller) return; // writing here itself wins
    const key = JSON.stringify(request);
    if (this.followed?.key !== key) {
      if (line.done || line.index !== 0) return; // joined mid-way: the snapshot at the end brings it all
      this.followed = { key, live: { info: this.answer?.info ?? null, prompt_tokens: null, tokens: [] } };
    }
    const live = this.followed.live;
    if (line.done) {
      this.followed = null;
      this.live = null;
      Object.assign(live, { cache_bytes: line.cache_bytes, seconds: line.seconds });
      if (live.tokens.length) answers.set(keyOf(paramsOfRequest(request, live.tokens.length)), live);
      this.ctx.panel.dataset.following = "false";
      return;
    }
    if (line.index !== live.tokens.length) return; // a line lost on the way: wait for the snapshot
    if (line.prompt_tokens) live.prompt_tokens = line.prompt_tokens;
    live.tokens.push(line);
    this.live = live;
    this.prompt.value = request.prompt;
    if (live.info) this.draw(live, live.tokens.length - 1);
    this.ctx.panel.dataset.following = "true"; // after draw(), which clears it
    this.status.textContent = `Following: ${live.tokens.length} of ${request.max_new_tokens} tokens written`;
  }

  busy(on) {
    this.go.disabled = on;
    this.one.disabled = on;
    this.stop.disabled = !on;
    this.ctx.panel.dataset.writing = String(on);
  }

  update(answer, stepId) {
    this.answer = answer;
    const ctx = this.ctx;
    if (!this.live && this.status.textContent.startsWith("Getting")) this.status.textContent = "";
    if (document.activeElement !== this.prompt && !this.live) this.prompt.value = ctx.params.prompt;
    this.temp.value = ctx.params.temp;
    this.topk.value = ctx.params.topk;
    this.topp.value = ctx.params.topp;
    this.pickers(answer.info);
    this.drawAsk(stepId);
    this.stepId = stepId;
    this.drawSize(answer.info);
    // the step about the cache's size brings its table up beside the words; the others keep it below the knobs
    if (stepId === "size") this.ask.after(this.size);
    else this.cacheTitle.before(this.size);
    if (this.live) return;
    const following = decodeLive(ctx.params.live); // another page (the class's presenter) is writing
    if (following) this.drawLive(following);
    else this.draw(answer, this.at());
  }

  /** Tokens another page is writing (write/live.js): the text so far and the cache's size, no model numbers. */
  drawLive(f) {
    const ctx = this.ctx;
    const n = f.tokens.length;
    this.text.replaceChildren(el("span", { className: "wr-prompt" }, f.prompt));
    f.tokens.forEach((t, i) => this.text.append(el("span", { className: "wr-tok", dataset: { testid: `write-token-${i}`, id: String(t.id) } }, show(t.token))));
    this.back.disabled = true;
    this.fwd.disabled = true;
    Object.assign(ctx.panel.dataset, { written: String(n), at: String(n - 1), following: "true", kvLen: String(f.promptTokens + n) });
    this.shown = null;
    this.drawBars();
    this.status.textContent = `The teacher's page is writing: ${n} tokens so far.`;
    this.cacheTitle.textContent = `The KV cache holds ${f.promptTokens + n} rows so far (the numbers come when the writing ends).`;
    this.cache.replaceChildren();
    this.sinkNote.textContent = "";
    this.scene?.update({ rows: f.promptTokens + n, weights: null, sink: false });
  }

  drawAsk(stepId) {
    if (this.askedStep === stepId) return; // a guess stays answered while the same step redraws
    this.askedStep = stepId;
    predictBox(this.ask, STEPS.find((s) => s.id === stepId)?.ask, {
      testid: "write-ask",
      answer: () => this.answer,
      ctx: this.ctx,
      answered: () => this.drawSize(this.answer.info),
    });
  }

  /** Whether the cache's sizes are still the size step's question: before that step, and on it until a guess. */
  sizeAsked() {
    const at = STEPS.findIndex((s) => s.id === this.stepId);
    const size = STEPS.findIndex((s) => s.id === "size");
    return at < size || (at === size && this.ask.dataset.answered !== "true");
  }

  pickers(info) {
    if (this.layer.options.length !== info.layers) {
      this.layer.replaceChildren(...Array.from({ length: info.layers }, (_, i) => el("option", { value: String(i) }, String(i))));
      this.head.replaceChildren(
        ...headGroups(info.heads, info.kv_heads).map((group, g) => {
          const og = el("optgroup", { label: `KV head ${g}: query heads ${group[0]}–${group[group.length - 1]} share its keys and values` });
          for (const h of group) og.append(el("option", { value: String(h) }, `${h} (reads KV head ${g})`));
          return og;
        }),
      );
    }
    this.layer.value = String(int(this.ctx.params.layer, 5));
    this.head.value = String(int(this.ctx.params.head, 0));
  }

  drawSize(info) {
    const asked = this.sizeAsked(); // its numbers would answer the question: "?" until the guess
    const row = (tokens) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, `${tokens.toLocaleString("en")} tokens`));
      for (const bytes of [4, 2]) {
        const b = cacheBytes({ layers: info.layers, kvHeads: info.kv_heads, d: info.d_k, bytes, tokens });
        tr.append(el("td", { dataset: { testid: `write-size-${tokens}-${bytes}`, bytes: String(b) } }, asked ? "? B" : `${b.toLocaleString("en")} B (${megabytes(b)})`));
      }
      return tr;
    };
    const head = el("tr");
    head.append(el("th", {}, "KV cache"), el("th", { scope: "col" }, "4 bytes a number (this server)"), el("th", { scope: "col" }, "2 bytes a number"));
    this.size.replaceChildren(el("caption", {}, `2 × ${info.layers} layers × ${info.kv_heads} KV heads × ${info.d_k} × bytes × tokens`), head, row(1024), row(8192));
  }

  /** The written text, the candidates, the 3D cache and its rows, for written token `at` of `a`. */
  draw(a, at) {
    const ctx = this.ctx;
    if (ctx.panel.dataset.following === "true" && this.status.textContent.startsWith("The teacher's page")) this.status.textContent = "";
    delete ctx.panel.dataset.following;
    this.text.replaceChildren();
    if (a.prompt_tokens) this.text.append(el("span", { className: "wr-prompt", dataset: { testid: "write-prompt-text" } }, a.prompt_tokens.join("")));
    else this.text.append(el("span", { className: "wr-prompt" }, this.prompt.value));
    a.tokens.forEach((t, i) => {
      const b = el("button", { type: "button", className: "wr-tok", "aria-pressed": String(i === at), dataset: { testid: `write-token-${i}`, id: String(t.id) } }, show(t.token));
      b.addEventListener("click", () => this.goTo(i));
      this.text.append(b);
    });
    this.back.disabled = at <= 0 || !!this.live;
    this.fwd.disabled = at < 0 || at >= a.tokens.length - 1 || !!this.live;
    ctx.panel.dataset.written = String(a.tokens.length);
    ctx.panel.dataset.at = String(at);
    const t = at >= 0 ? a.tokens[at] : null;
    this.shown = t;
    this.drawBars();
    const withheld = !!ctx.withheld;
    if (!t) {
      const rows = a.prompt_tokens?.length ?? 0;
      this.cacheTitle.textContent = "The KV cache fills as the model reads the prompt and writes.";
      this.cache.replaceChildren();
      this.sinkNote.textContent = "";
      this.scene?.update({ rows, weights: null, sink: false });
      ctx.panel.dataset.kvLen = String(rows);
      return;
    }
    const tokens = cacheTokens(a, at);
    const weights = withheld ? null : t.attention;
    ctx.panel.dataset.kvLen = String(t.kv_len);
    this.cacheTitle.textContent = withheld
      ? `The KV cache: ${t.kv_len} rows (the weights are hidden for now).`
      : `The KV cache when token ${at + 1} was chosen: ${t.kv_len} rows, and how much the query of head ${t.head} in layer ${t.layer} looks at each.`;
    this.cache.replaceChildren(
      ...tokens.map((tok, j) => {
        const w = weights ? weights[j] : null;
        const li = el("li", { dataset: { testid: `write-row-${j}`, ...(w === null ? {} : { w: String(w) }) } });
        li.append(el("span", { className: "wr-row-tok" }, show(tok)));
        if (w !== null) {
          li.append(el("span", { className: "wr-row-w" }, w.toFixed(3)));
          li.style.setProperty("--w", String(Math.min(1, w)));
        }
        return li;
      }),
    );
    const sink = !!weights && weights.indexOf(Math.max(...weights)) === 0 && t.kv_len > 2;
    this.cache.firstElementChild?.classList.toggle("wr-row-sink", sink);
    this.sinkNote.textContent = sink
      ? `Token 0 (“${show(tokens[0])}”) gets ${pct(weights[0])} of this query's attention although it means little here: the attention sink. Softmax must give out all its attention, so a head with nothing useful to look at parks it on the first token, which every token can see.`
      : "";
    this.scene?.update({ rows: t.kv_len, weights, sink });
  }

  /** The ten candidates: the model's probability (grey) and the chance of being drawn under the knobs (orange). */
  drawBars() {
    const t = this.shown;
    const s = { temperature: num(this.temp.value, 0), topK: int(this.topk.value, 0), topP: num(this.topp.value, 1) };
    this.knobText.textContent = ` ${s.temperature === 0 ? "greedy" : `T ${s.temperature.toFixed(1)}`}, k ${s.topK || "all"}, p ${s.topP.toFixed(2)}`;
    if (!t || this.ctx.withheld) {
      this.cands.replaceChildren();
      return;
    }
    const chance = chances(t.candidates, s);
    this.cands.replaceChildren(
      ...t.candidates.map((c, i) => {
        const li = el("li", { className: c.id === t.id ? "wr-cand wr-chosen" : "wr-cand", dataset: { testid: `write-cand-${i}`, id: String(c.id), p: String(c.p), chance: String(chance[i]) } });
        const bars = el("span", { className: "wr-bars" });
        const pBar = el("span", { className: "wr-bar-p" });
        pBar.style.width = pct(c.p);
        const cBar = el("span", { className: "wr-bar-c" });
        cBar.style.width = pct(chance[i]);
        bars.append(pBar, cBar);
        li.append(el("span", { className: "wr-cand-tok" }, show(c.token)), bars, el("span", { className: "wr-cand-p" }, `${pct(c.p)} → ${pct(chance[i])}`));
        return li;
      }),
    );
  }

  dispose() {
    window.removeEventListener(FOLLOW_EVENT, this.onFollow);
    this.controller?.abort();
    this.live = null;
    this.scene?.dispose();
    this.ctx.panel.classList.remove("wr-panel");
    for (const k of ["writing", "written", "at", "kvLen", "following"]) delete this.ctx.panel.dataset[k];
  }
}
