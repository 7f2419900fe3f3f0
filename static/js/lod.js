// A long sentence's view at its level of detail (the server's detail "summary", app/lod.py): the
// rows the page has asked for, each kept at its own index in one answer, and the whole n × n table
// as blocks (the mean share of each block's attention, its largest weight) with each query's
// strongest keys. Pure functions of the server's answers and the state: api.js asks, the store
// keeps the answer (actions.js rowsReceived), attention/longview.js derives what is drawn.
//
// An answer here looks like a full one to the code that draws a window of it: `weights[i][j]` is
// a number for every row i the page has (`rows`), and model.js sliceView() of a window of such rows
// is a small full answer. Rows it lacks are holes (undefined).

import { nested } from "./model.js";

export const ROWS = 32; // rows asked for around the focus (the 3D view's window, derive.js SCENE_MAX)
export const KEPT_ROWS = 256; // rows kept at most (~8 MB): the ones farthest from the newest go first
export const ROW_STAGES = ["q", "k", "v", "scores", "weights", "output"]; // scaled and masked are made here
export const SUMMARY_STAGES = ["block_mean", "block_peak", "top_keys", "top_weights"];

/** Whether an answer is a long sentence's summary (detail "summary"). */
export const isLong = (data) => data?.detail === "summary";

/** Rows from..to − 1 of a window of `count` rows around `focus` among n, as the 3D view centres it. */
export function rowWindow(n, focus, count = ROWS) {
  const size = Math.min(n, count);
  const from = Math.min(n - size, Math.max(0, focus - Math.floor(size / 2)));
  return { from, to: from + size };
}

/** The block (0-based) that holds token i, for block edges `edges` (block b: edges[b] … edges[b + 1] − 1). */
export function blockOf(edges, i) {
  let lo = 0;
  let hi = edges.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (edges[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** A row of weights as each block's share of it: Σ of its weights over the block's keys. */
export function blockShares(row, edges) {
  const out = new Array(edges.length - 1).fill(0);
  for (let b = 0; b < out.length; b++) {
    let s = 0;
    for (let j = edges[b]; j < edges[b + 1]; j++) s += row[j];
    out[b] = s;
  }
  return out;
}

/** Of rows from..to − 1, those `data` lacks. */
export function missingRows(data, from, to) {
  const out = [];
  for (let i = from; i < to; i++) if (!data.weights[i]) out.push(i);
  return out;
}

/**
 * A summary frame as the page keeps it: the fields, its rows' stages placed at their indices (holes
 * elsewhere), `scaled` and `masked` made here from `scores` as app/attention.py makes them (IEEE
 * division by √d_k; −∞ after the query under the causal mask), and the blocks and top keys nested.
 */
export function longFrom({ fields, arrays }) {
  const n = fields.tokens.length;
  const sparse = () => new Array(n);
  const data = { ...fields, q: sparse(), k: sparse(), v: sparse(), output: sparse(), scores: sparse(), scaled: sparse(), masked: sparse(), weights: sparse() };
  for (const name of SUMMARY_STAGES) data[name] = arrays[name] ? nested(arrays[name]) : null;
  return placeRows(data, fields.rows, arrays);
}

/** `data` with the rows of a later answer (`fields.rows`, `arrays`) added: a new answer object. */
export function withRows(data, { fields, arrays }, focus = null) {
  const next = { ...data };
  for (const name of ["q", "k", "v", "output", "scores", "scaled", "masked", "weights"]) next[name] = data[name].slice();
  const kept = placeRows(next, fields.rows, arrays);
  const have = kept.rows;
  if (have.length <= KEPT_ROWS) return kept;
  // too many rows: keep the newest and those nearest the focus
  const centre = focus ?? fields.rows[0];
  const fresh = new Set(fields.rows);
  const drop = have.filter((i) => !fresh.has(i)).sort((a, b) => Math.abs(b - centre) - Math.abs(a - centre)).slice(0, have.length - KEPT_ROWS);
  for (const i of drop) for (const name of ["q", "k", "v", "output", "scores", "scaled", "masked", "weights"]) kept[name][i] = undefined;
  const gone = new Set(drop);
  return { ...kept, rows: have.filter((i) => !gone.has(i)) };
}

function placeRows(data, rows, arrays) {
  const root = Math.sqrt(data.d_k);
  const causal = data.mask === "causal";
  const rowsOf = (name) => (arrays[name] ? nested(arrays[name]) : null);
  const got = Object.fromEntries(["q", "k", "v", "output", "scores", "weights", "scaled", "masked"].map((name) => [name, rowsOf(name)]));
  rows.forEach((i, r) => {
    for (const name of ["q", "k", "v", "output", "scores", "weights"]) if (got[name]) data[name][i] = got[name][r];
    const scaled = got.scaled ? got.scaled[r] : data.scores[i].map((x) => x / root);
    data.scaled[i] = scaled;
    data.masked[i] = got.masked ? got.masked[r].map((x) => (x === -Infinity ? null : x)) : causal ? scaled.map((x, j) => (j <= i ? x : null)) : scaled;
  });
  const all = new Set([...(data.rows ?? []), ...rows]);
  data.rows = [...all].sort((a, b) => a - b);
  return data;
}

/**
 * The focused query's strongest keys (the summary's top_keys row, −1 past the keys it sees), each
 * with its weight, the block that holds it and whether it lies in the window from..to − 1.
 */
export function topKeys(data, i, from, to) {
  const keys = data.top_keys?.[i] ?? [];
  const weights = data.top_weights?.[i] ?? [];
  const out = [];
  keys.forEach((j, r) => {
    if (j < 0) return;
    out.push({ key: j, weight: weights[r], block: blockOf(data.edges, j), inWindow: j >= from && j < to });
  });
  return out;
}
