// Where things go. Queries stand in a front row, keys in a back row and values just behind
// the keys, so the links from a query to the keys read like a row of the table. Vectors are
// drawn in the vertical plane of their row (their first two coordinates: x right, y up; or,
// for the model's 32-D vectors, their PCA projection in `data.drawn`).

export const SPACING = 2.9;
const ROW_GAP = 3.4; // query row to the middle, for up to 5 tokens; more tokens spread the rows
const VALUE_BEHIND = 1.6; // the values' plane, behind the keys'
const OUTPUT_AHEAD = 2.8; // the output plane, in front of the queries' (shown at the mix step)
export const ARROW_MAX = 2.1; // the longest q, k or v arrow, in scene units

/**
 * `deep` (≥ 1) spreads the rows further apart front to back: a tall, narrow view (a phone held
 * upright) has height to spare and needs it for the labels hanging under the key row.
 */
export function layout(data, deep = 1) {
  const n = data.tokens.length;
  const xs = data.tokens.map((_, i) => (i - (n - 1) / 2) * SPACING);
  // q and k live in one space (d_k), v and z in another (d_v): each gets its own scale
  // data.drawn (sentence mode): the 2-D projection of 32-D vectors (projection.js)
  const drawn = data.drawn ?? data;
  const longest = (rows) => Math.max(0, ...rows.map((row) => Math.hypot(row[0] ?? 0, row[1] ?? 0)));
  const qk = Math.max(longest(drawn.q), longest(drawn.k));
  const v = Math.max(longest(drawn.v), data.drawn ? longest(drawn.output) : 0);
  const scale = qk > 0 ? ARROW_MAX / qk : 1;
  const valueScale = v > 0 ? ARROW_MAX / v : 1;
  const width = (n - 1) * SPACING;
  // past 12 tokens the rows stop spreading: deeper rows would shrink the back row's labels
  const gap = ROW_GAP * Math.min(2.75, Math.max(1, width / (4 * SPACING))) * deep;
  const z = { query: gap, key: -gap, value: -gap - VALUE_BEHIND, output: gap + OUTPUT_AHEAD };
  return { n, xs, scale, valueScale, width, z, deep };
}
