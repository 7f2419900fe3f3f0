// Chapter `writing`: a real decoder (SmolLM2-135M) writing one token at a time. Its query reads the
// keys and values of every token before it, kept in a cache that grows one row per written token;
// the ten likeliest next tokens come out as bars, and temperature, top-k and top-p decide which
// one is drawn. POST /api/generate (one JSON object here; the Write button streams its NDJSON).

import { el } from "../dom.js";
import { fixed3, heatRgb, inkFor, rgbCss } from "../format.js";
import { pyNum, pyStr } from "../pycode.js";
import { KVCacheView } from "../scene/kvcache.js";
import { scrollBox } from "./widgets.js";

const DECODER = "smollm2-135m";
const WRITE = 16; // tokens the Write button writes
const FIRST = 4; // tokens written when the chapter opens (quicker to a first picture)
const BYTES_PER_TOKEN = 30 * 2 * 3 * 64 * 4; // layers × (k, v) × KV heads × head size × float32
const f3 = (x) => fixed3(x);
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const shown = (t) => (t.trim() === "" ? JSON.stringify(t) : t);

let view = null; // the mounted chapter's view (the Write button streams into it)

/** The ten candidates' chance of being drawn under (temperature, top-k, top-p), from their logits
 *  (renormalised among these ten: the rest of the 49,152 tokens hold too little to change the bars). */
export function drawChances(cands, temperature, topK, topP) {
  if (temperature === 0) return cands.map((_, i) => (i === 0 ? 1 : 0));
  const z = cands.map((c) => c.logit / temperature);
  const m = Math.max(...z);
  let p = z.map((x) => Math.exp(x - m));
  const sum = p.reduce((a, b) => a + b, 0);
  p = p.map((x) => x / sum);
  let before = 0;
  p = p.map((x, i) => {
    const keep = (topK === 0 || i < topK) && before < topP;
    before += x;
    return keep ? x : 0;
  });
  const kept = p.reduce((a, b) => a + b, 0);
  return p.map((x) => x / kept);
}

function cached(a, i) {
  return [...a.prompt_tokens, ...a.tokens.slice(0, i).map((t) => t.token)];
}

const STEPS = [
  {
    id: "predict",
    title: "Guess the next token",
    short: "guess",
    text: (a) =>
      `The model reads “${a.prompt_tokens.join("")}” and must write one token. Before you look: which of the ` +
      `buttons do you think it finds likeliest? Pick one, then the bars show how likely the model thinks each is. ` +
      `A decoder writes this way: one token, then it reads that token too and writes the next.`,
  },
  {
    id: "cache",
    title: "The KV cache grows one row per token",
    short: "cache",
    text: (a) => {
      const n = a.prompt_tokens.length;
      return (
        `Each token's key and value (after the rotary turn of its position) are kept in a cache: the prompt's ` +
        `${n} rows first, then one more per written token. To write token t the model runs only the newest ` +
        `token through its layers; its query reads the ${n} + t cached keys. So step t costs t dot products per ` +
        `head, not t², since nothing already cached is computed again. The causal mask is the cache itself: ` +
        `later tokens are not in it yet. For this model a token's row holds 30 layers × 2 (k and v) × 3 KV heads ` +
        `× 64 numbers × 4 bytes = ${BYTES_PER_TOKEN.toLocaleString("en")} bytes: ${mb(1024 * BYTES_PER_TOKEN)} for ` +
        `1,024 tokens and ${mb(8192 * BYTES_PER_TOKEN)} for its full 8,192. Move the slider to walk through the ` +
        `written tokens.`
      );
    },
  },
  {
    id: "candidates",
    title: "The next-token candidates",
    short: "candidates",
    text: () =>
      `The last layer's output for the newest token, times the embedding matrix, gives one score (logit) per ` +
      `token of the vocabulary; softmax turns them into probabilities. Temperature divides the logits first: ` +
      `below 1 the likeliest token gets even likelier, above 1 the bars even out; 0 always takes the likeliest ` +
      `(greedy). Top-k keeps only the k likeliest, top-p the fewest whose probabilities add up to p. Move the ` +
      `sliders: the bars are redrawn at once.`,
  },
  {
    id: "sink",
    title: "Most of the weight goes to token 0",
    short: "sink",
    text: (a, ctx) => {
      const i = view ? view.index : a.tokens.length - 1;
      const w = a.tokens[i]?.attention?.[0] ?? 0;
      return (
        `Look at the first row of the cache: the query gives token 0 (“${shown(a.prompt_tokens[0])}”) ` +
        `${(100 * w).toFixed(0)}% of its weight in layer ${a.tokens[0].layer}, head ${a.tokens[0].head}, whatever that ` +
        `token says. Softmax must hand out a total of 1; a head with nothing useful to read parks its weight on ` +
        `the first token, which every query can see. That is the attention sink (Xiao et al., 2024).` +
        (ctx ? "" : "")
      );
    },
  },
];

function numbersOf(a, i) {
  const line = a.tokens[i];
  return [
      { label: "tokens in the cache", value: String(line.kv_len), testid: "writing-kv-len" },
      { label: "written token", value: shown(line.token), testid: "writing-token" },
      { label: "its probability", value: f3(line.candidates.find((c) => c.id === line.id)?.p ?? 0), testid: "writing-p" },
      { label: "weight on token 0", value: f3(line.attention[0]), testid: "writing-sink" },
      { label: "cache at 1,024 tokens", value: mb(1024 * BYTES_PER_TOKEN), testid: "writing-cache-1k" },
      { label: "cache at 8,192 tokens", value: mb(8192 * BYTES_PER_TOKEN), testid: "writing-cache-8k" },
    ];
}

class WritingView {
  constructor(ctx) {
    this.ctx = ctx;
    this.answer = null;
    this.index = 0;
    this.guess = null;
    this.scene = ctx.stage ? new KVCacheView(ctx.stage) : null;
    const form = el("form", { className: "ca-form", dataset: { testid: "write-form" } });
    this.prompt = el("input", { type: "text", maxlength: "2000", "aria-label": "prompt", dataset: { testid: "write-prompt" } });
    this.prompt.value = ctx.params.prompt;
    const write = el("button", { type: "submit", dataset: { testid: "write-button" } }, "Write");
    form.append(el("label", { className: "ca-label" }, "Prompt"), this.prompt, write);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.stream(this.prompt.value);
    });
    const stepRow = el("div", { className: "ca-form" });
    this.back = el("button", { type: "button", dataset: { testid: "write-back" } }, "◀");
    this.forward = el("button", { type: "button", dataset: { testid: "write-forward" } }, "▶");
    this.slider = el("input", { type: "range", min: "0", max: "0", step: "1", "aria-label": "written token", dataset: { testid: "write-step" } });
    this.where = el("span", { dataset: { testid: "write-where" } });
    stepRow.append(el("span", { className: "ca-label" }, "Token"), this.back, this.slider, this.forward, this.where);
    this.back.addEventListener("click", () => this.show(this.index - 1));
    this.forward.addEventListener("click", () => this.show(this.index + 1));
    this.slider.addEventListener("input", () => this.show(Number(this.slider.value)));
    this.text = el("p", { className: "ca-proof", dataset: { testid: "write-text" } });
    const knobs = el("div", { className: "ca-form" });
    this.temperature = this.knob(knobs, "temperature", "0", "2", "0.05", "0");
    this.topK = this.knob(knobs, "top-k", "0", "10", "1", "0");
    this.topP = this.knob(knobs, "top-p", "0.05", "1", "0.05", "1");
    this.choices = el("div", { className: "ca-choices", dataset: { testid: "write-choices" } });
    this.bars = el("div", { dataset: { testid: "write-bars" } });
    this.rows = el("div", { dataset: { testid: "write-rows" } });
    ctx.panel.append(form, stepRow, this.text, this.choices, knobs, this.bars, this.rows);
  }

  knob(parent, name, min, max, step, value) {
    const input = el("input", { type: "range", min, max, step, "aria-label": name, dataset: { testid: `write-${name}` } });
    input.value = value;
    const out = el("span", { dataset: { testid: `write-${name}-value` } }, value);
    input.addEventListener("input", () => {
      out.textContent = input.value;
      this.drawBars();
    });
    parent.append(el("label", { className: "ca-label" }, name), input, out);
    return input;
  }

  settings() {
    return [Number(this.temperature.value), Number(this.topK.value), Number(this.topP.value)];
  }

  /** Write after `prompt`, showing each token as its line arrives (POST /api/generate, NDJSON). */
  async stream(prompt) {
    const res = await fetch("/api/generate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: DECODER, prompt, max_new_tokens: WRITE, layer: Number(this.ctx.params.layer), head: Number(this.ctx.params.head) }),
    });
    if (!res.ok) {
      const j = await res.json().catch(() => null);
      this.text.textContent = j?.detail?.[0]?.msg ?? `the server answered ${res.status}`;
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let answer = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 1);
        if (line.done) {
          answer = { ...answer, ...line };
        } else {
          if (!answer) answer = { model: line.model, prompt_tokens: line.prompt_tokens, prompt_ids: line.prompt_ids, tokens: [] };
          answer.tokens.push(line);
          this.answer = answer;
          this.show(answer.tokens.length - 1);
        }
      }
    }
    if (answer) {
      this.answer = answer;
      this.show(answer.tokens.length - 1);
      this.ctx.app.dataset.written = String(answer.tokens.length);
    }
  }

  set(answer, stepId) {
    this.answer = answer;
    this.stepId = stepId;
    this.show(stepId === "predict" ? 0 : Math.min(this.index, answer.tokens.length - 1));
  }

  show(i) {
    const a = this.answer;
    if (!a || !a.tokens.length) return;
    this.index = Math.max(0, Math.min(a.tokens.length - 1, i));
    const line = a.tokens[this.index];
    this.slider.max = String(a.tokens.length - 1);
    this.slider.value = String(this.index);
    this.where.textContent = `${this.index + 1} of ${a.tokens.length} · the cache holds ${line.kv_len}`;
    this.text.textContent = "";
    this.text.append(a.prompt_tokens.join(""));
    const written = el("strong", {}, a.tokens.slice(0, this.index + 1).map((t) => t.token).join(""));
    this.text.append(written);
    this.drawChoices();
    this.drawBars();
    this.drawRows();
    this.scene?.update(cached(a, this.index), line.attention, line.token);
    for (const n of numbersOf(a, this.index)) {
      const node = document.querySelector(`[data-testid="${n.testid}"]`); // the framework's numbers list
      if (node) node.textContent = n.value;
    }
  }

  drawChoices() {
    this.choices.textContent = "";
    if (this.stepId !== "predict") return;
    const line = this.answer.tokens[this.index];
    const five = line.candidates.slice(0, 5).map((c) => c.token).sort();
    for (const t of five) {
      const b = el("button", { type: "button", dataset: { testid: "write-guess" } }, shown(t));
      b.addEventListener("click", () => {
        this.guess = t;
        this.drawChoices();
        this.drawBars();
      });
      this.choices.append(b);
    }
    if (this.guess !== null) {
      const rank = line.candidates.findIndex((c) => c.token === this.guess);
      const verdict = rank === 0 ? "Right: the model's favourite." : `The model ranks it ${rank + 1}${rank === 1 ? "nd" : rank === 2 ? "rd" : "th"}; its favourite is “${shown(line.candidates[0].token)}”.`;
      this.choices.append(el("p", { className: "ca-note", dataset: { testid: "write-verdict" } }, verdict));
    }
  }

  drawBars() {
    this.bars.textContent = "";
    if (!this.answer) return;
    if (this.stepId === "predict" && this.guess === null) {
      this.bars.append(el("p", { className: "ca-note" }, "Pick a token above: the bars appear once you have guessed."));
      return;
    }
    const line = this.answer.tokens[this.index];
    const [t, k, p] = this.settings();
    const chances = drawChances(line.candidates, t, k, p);
    const table = el("table", { className: "ca-table", dataset: { testid: "write-candidates" } });
    table.append(el("caption", {}, `After “${shown(cached(this.answer, this.index).slice(-1)[0])}”: the ten likeliest next tokens`));
    const head = el("tr");
    for (const h of ["token", "model's p", "drawn with", ""]) head.append(el("th", { scope: "col" }, h));
    table.append(head);
    line.candidates.forEach((c, i) => {
      const tr = el("tr", { dataset: { testid: `write-cand-${i}` } });
      tr.append(el("td", { dataset: { testid: `write-cand-${i}-token` } }, shown(c.token)));
      tr.append(el("td", { dataset: { testid: `write-cand-${i}-p` } }, f3(c.p)));
      tr.append(el("td", { dataset: { testid: `write-cand-${i}-draw` } }, f3(chances[i])));
      const bar = el("span", { className: "ca-bar" });
      bar.style.width = `${Math.round(120 * chances[i])}px`;
      const cell = el("td");
      cell.append(bar);
      tr.append(cell);
      if (c.id === line.id) tr.classList.add("ca-hot");
      table.append(tr);
    });
    this.bars.append(scrollBox(table));
  }

  drawRows() {
    this.rows.textContent = "";
    const a = this.answer;
    const line = a.tokens[this.index];
    const tokens = cached(a, this.index);
    const table = el("table", { className: "ca-table", dataset: { testid: "write-cache" } });
    table.append(el("caption", {}, `The cache: ${tokens.length} rows of keys and values; the weight the query gives each (layer ${line.layer}, head ${line.head})`));
    tokens.forEach((tok, j) => {
      const tr = el("tr", { dataset: { testid: `write-row-${j}` } });
      tr.append(el("th", { scope: "row" }, String(j)));
      tr.append(el("td", { dataset: { testid: `write-row-${j}-token` } }, shown(tok)));
      const w = line.attention[j];
      const td = el("td", { dataset: { testid: `write-row-${j}-weight` } }, f3(w));
      const rgb = heatRgb(w);
      td.style.background = rgbCss(rgb);
      td.style.color = rgbCss(inkFor(rgb));
      tr.append(td);
      if (j === 0) tr.append(el("td", { className: "ca-note" }, "sink"));
      table.append(tr);
    });
    this.rows.append(scrollBox(table));
  }

  dispose() {
    this.scene?.dispose();
  }
}

export default {
  id: "writing",
  title: "Writing one token at a time",
  summary: "A real decoder writes: its query reads a growing cache of keys and values, and the candidates become a choice.",
  params: { prompt: "The capital of France is", layer: "29", head: "0" },
  steps: STEPS,

  async load(ctx) {
    return ctx.post("/api/generate", {
      model: DECODER,
      prompt: ctx.params.prompt,
      max_new_tokens: FIRST,
      layer: Number(ctx.params.layer),
      head: Number(ctx.params.head),
    });
  },

  mount(ctx) {
    view = new WritingView({ ...ctx, app: document.getElementById("app") });
    return {
      update(answer, stepId) {
        view.set(answer, stepId);
      },
      dispose() {
        view?.dispose();
        view = null;
      },
    };
  },

  numbers: (a) => numbersOf(a, view ? view.index : 0),

  code: (a) => {
    const line = a.tokens[view ? view.index : 0];
    const logits = line.candidates.map((c) => pyNum(c.logit)).join(", ");
    return [
      "import json",
      "import numpy as np",
      "",
      "# The KV cache of SmolLM2-135M: layers × (k and v) × KV heads × head size × 4 bytes (float32)",
      "per_token = 30 * 2 * 3 * 64 * 4",
      "# The ten likeliest next tokens' logits (the page's numbers), and softmax at temperature t",
      `tokens = ${pyStr(line.candidates.map((c) => c.token).join("|"))}.split("|")`,
      `logits = np.array([${logits}])`,
      "def chances(t):",
      "    z = logits / t",
      "    p = np.exp(z - z.max())",
      "    return p / p.sum()",
      "print(json.dumps({",
      '    "per_token": per_token,',
      '    "cache_1k_mb": round(1024 * per_token / 1e6, 1),',
      '    "cache_8k_mb": round(8192 * per_token / 1e6, 1),',
      '    "t1": chances(1.0).round(4).tolist(),',
      '    "t05": chances(0.5).round(4).tolist(),',
      "}))",
    ].join("\n");
  },
};
