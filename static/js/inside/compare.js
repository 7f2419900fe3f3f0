// The compare view's arithmetic (no DOM): two answers side by side with one focus, and their
// difference cell by cell. Two answers with the same tokens (full vs causal, a head switched off)
// are compared token by token; two with different tokens (two sentences, two models) word by word:
// a word's share is the sum over its tokens (the model's `words` say which word each token is part
// of; [CLS], [SEP] and the like belong to none and are left out).

/** Whether two answers hold the same tokens, in the same order. */
export function sameTokens(a, b) {
  return a.tokens.length === b.tokens.length && a.tokens.every((t, i) => t === b.tokens[i]);
}

/** The words of an answer, each as the text of its tokens joined (trimmed), in order. */
export function wordNames(answer) {
  const names = [];
  answer.words.forEach((w, i) => {
    if (w === null || w === undefined) return;
    names[w] = (names[w] ?? "") + answer.tokens[i].replace(/^##/, "");
  });
  return names.map((s) => (s ?? "").trim() || "␣");
}

/** A row of token shares summed word by word: (n,) → (words,). */
export function pooled(row, words, count) {
  const out = new Array(count).fill(0);
  row.forEach((x, i) => {
    const w = words[i];
    if (w !== null && w !== undefined) out[w] += x;
  });
  return out;
}

/** The token of `answer` that holds word `w` (its last token: what a model reads the word by), or null. */
export function tokenOfWord(answer, w) {
  let found = null;
  answer.words.forEach((x, i) => {
    if (x === w) found = i;
  });
  return found;
}

/**
 * One side of the comparison: the focus's share of each column (token or word) after each layer,
 * rows from the input (0) to the last layer: { rows: (L + 1) × m, names: m column names }.
 */
export function side(answer, byWord) {
  const through = answer.focus_paths.through;
  if (!byWord) return { rows: through, names: answer.tokens.map((t) => t.trim() || "␣") };
  const names = wordNames(answer);
  return { rows: through.map((r) => pooled(r, answer.words, names.length)), names };
}

/**
 * The difference b − a of two sides' input rows (what the focus takes from each column in the end),
 * when they line up (the same number of columns), with the `top` largest changes: { delta, top: [{ j, d }] }
 * or null.
 */
export function difference(a, b, top = 3) {
  if (a.names.length !== b.names.length) return null;
  const delta = b.rows[0].map((x, j) => x - a.rows[0][j]);
  const order = [...delta.keys()].sort((i, j) => Math.abs(delta[j]) - Math.abs(delta[i]) || i - j);
  return { delta, top: order.slice(0, top).map((j) => ({ j, d: delta[j] })) };
}

/** The change of one row (a query's weights with and without a switch), with the `top` largest: { delta, top: [{ i, j, d }] }. */
export function rowDifference(a, b, i, top = 3) {
  const delta = b.map((x, j) => x - a[j]);
  const order = [...delta.keys()].sort((x, y) => Math.abs(delta[y]) - Math.abs(delta[x]) || x - y);
  return { delta, top: order.slice(0, top).map((j) => ({ i, j, d: delta[j] })) };
}
