// Where things go. Queries stand in a front row, keys in a back row and values just behind
// the keys, so the links from a query to the keys read like a row of the table. Vectors are
// drawn in the vertical plane of their row (their first two coordinates: x right, y up).

export const SPACING = 2.9;
export const Z_QUERY = 3.4;
export const Z_KEY = -3.4;
export const Z_VALUE = -5.0;
export const Z_OUTPUT = 6.2; // the output plane, in front of the queries (shown at the mix step)
export const ARROW_MAX = 2.1; // the longest q, k or v arrow, in scene units

export function layout(data) {
  const n = data.tokens.length;
  const xs = data.tokens.map((_, i) => (i - (n - 1) / 2) * SPACING);
  // q and k live in one space (d_k), v and z in another (d_v): each gets its own scale
  const longest = (rows) => Math.max(0, ...rows.map((row) => Math.hypot(row[0] ?? 0, row[1] ?? 0)));
  const qk = Math.max(longest(data.q), longest(data.k));
  const v = longest(data.v);
  const scale = qk > 0 ? ARROW_MAX / qk : 1;
  const valueScale = v > 0 ? ARROW_MAX / v : 1;
  return { n, xs, scale, valueScale, width: (n - 1) * SPACING };
}
