// Write mode's pure parts: how the next token is chosen from the model's candidates, the KV
// cache's size, and the query heads grouped by the KV head they share (reading the stream: stream.js).
// No DOM, no three.js: the tests (and the chapters) call these directly.

/**
 * The chance of each candidate being drawn, among the ten the server sent, under temperature,
 * top-k and top-p (the same rules the server applies to the whole vocabulary; here renormalised
 * over these ten). temperature 0 = greedy: the likeliest candidate gets 1.
 * @param {{logit: number, p: number}[]} cands sorted, likeliest first
 * @returns {number[]} one chance per candidate, adding up to 1
 */
export function chances(cands, { temperature = 0, topK = 0, topP = 1 } = {}) {
  const n = cands.length;
  if (!n) return [];
  if (!(temperature > 0)) return cands.map((_, i) => (i === 0 ? 1 : 0));
  const keep = topK > 0 ? Math.min(topK, n) : n;
  const top = Math.max(...cands.slice(0, keep).map((c) => c.logit));
  const w = cands.map((c, i) => (i < keep ? Math.exp((c.logit - top) / temperature) : 0));
  let sum = w.reduce((a, b) => a + b, 0);
  let p = w.map((x) => x / sum);
  if (topP < 1) {
    // the smallest set of likeliest candidates whose chances add up to at least top-p
    let acc = 0;
    p = p.map((x) => {
      if (acc >= topP) return 0;
      acc += x;
      return x;
    });
    sum = p.reduce((a, b) => a + b, 0);
    p = p.map((x) => x / sum);
  }
  return p;
}

/** Bytes of the KV cache: 2 (k and v) × layers × KV heads × d × bytes per number × tokens. */
export function cacheBytes({ layers, kvHeads, d, bytes, tokens }) {
  return 2 * layers * kvHeads * d * bytes * tokens;
}

/** Query heads grouped by the KV head they read: [[0,1,2],[3,4,5],[6,7,8]] for 9 over 3. */
export function headGroups(heads, kvHeads) {
  const per = heads / kvHeads;
  return Array.from({ length: kvHeads }, (_, g) => Array.from({ length: per }, (_, i) => g * per + i));
}

/** A token as text a reader can see: a newline as ↵, a tab as ⇥, nothing as ∅. */
export function visible(token) {
  return token.replace(/\n/g, "↵").replace(/\t/g, "⇥") || "∅";
}
