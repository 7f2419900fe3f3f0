// Where things go. Queries stand in a front row, keys in a back row and values just behind
// the keys, so the links from a query to the keys read like a row of the table. Vectors are
// drawn in the vertical plane of their row (their first two coordinates: x right, y up; or,
// for the model's 32-D vectors, their PCA projection in `data.drawn`).

export const SPACING = 2.9;
const ROW_GAP = 3.4; // query row to the middle, for up to 5 tokens; more tokens spread the rows
const VALUE_BEHIND = 1.6; // the values' plane, behind the keys'
const OUTPUT_AHEAD = 2.8; // the output plane, in front of the queries' (shown at the mix step)
export const ARROW_MAX = 2.1; // the longest q, k or v arrow, in scene units
const BLOCK_SPACING = 1.5; // a long sentence's blocks of keys outside the window (scene/blocks.js), apart
const BLOCK_GAP = 2.4; // from the window's end to its nearest block

/**
 * `deep` (≥ 1) spreads the rows further apart front to back: a tall, narrow view (a phone held
 * upright) has height to spare and needs it for the labels hanging under the key row.
 * `blocks` (a long sentence, attention/longview.js): its keys outside the window, block by block,
 * stand in a closer row on either side of the words (segmentXs); the whole is centred.
 */
export function layout(data, deep = 1, blocks = null) {
  const n = data.tokens.length;
  let xs = data.tokens.map((_, i) => (i - (n - 1) / 2) * SPACING);
  let segmentXs = null;
  let extra = 0;
  if (blocks?.segments.length) {
    const before = blocks.segments.filter((s) => s.to <= blocks.from).length;
    const after = blocks.segments.length - before;
    const left = xs[0] - BLOCK_GAP;
    const right = xs[n - 1] + BLOCK_GAP;
    segmentXs = blocks.segments.map((_, i) => (i < before ? left - (before - 1 - i) * BLOCK_SPACING : right + (i - before) * BLOCK_SPACING));
    const lo = before ? left - (before - 1) * BLOCK_SPACING : xs[0];
    const hi = after ? right + (after - 1) * BLOCK_SPACING : xs[n - 1];
    const shift = -(lo + hi) / 2;
    xs = xs.map((x) => x + shift);
    segmentXs = segmentXs.map((x) => x + shift);
    extra = hi - lo - (n - 1) * SPACING;
  }
  // q and k live in one space (d_k), v and z in another (d_v): each gets its own scale
  // data.drawn (sentence mode): the 2-D projection of 32-D vectors (projection.js)
  const drawn = data.drawn ?? data;
  const longest = (rows) => Math.max(0, ...rows.map((row) => Math.hypot(row[0] ?? 0, row[1] ?? 0)));
  const qk = Math.max(longest(drawn.q), longest(drawn.k));
  const v = Math.max(longest(drawn.v), data.drawn ? longest(drawn.output) : 0);
  const scale = qk > 0 ? ARROW_MAX / qk : 1;
  const valueScale = v > 0 ? ARROW_MAX / v : 1;
  const width = (n - 1) * SPACING + extra;
  // past 12 tokens the rows stop spreading: deeper rows would shrink the back row's labels
  const gap = ROW_GAP * Math.min(2.75, Math.max(1, width / (4 * SPACING))) * deep;
  const z = { query: gap, key: -gap, value: -gap - VALUE_BEHIND, output: gap + OUTPUT_AHEAD };
  return { n, xs, scale, valueScale, width, z, deep, segmentXs };
}
