// Sentence mode: the real model behind the sentence box, in pure functions of the server's
// answers (its requests are api.js's): a model's facts, a frame as the JSON answer's arrays,
// the stages the page makes itself (the scaled scores, the causal mask's masked scores), and
// display-side views of a response (word pieces merged, a window of tokens for the 3D view).
// Every attention number comes from the API; merging only adds the API's weights up (mergeView).

export const ANIMAL = "The animal didn't cross the street because it was too tired.";
/** Where the animal sentence opens: layer 3, head 1 sends 0.68 of "it"'s attention to "animal". */
export const ANIMAL_VIEW = { layer: 3, head: 1, word: "it" };

/** An entry of GET /api/models in GET /api/model's shape. */
export function asInfo(m) {
  return {
    id: m.id,
    name: m.name,
    kind: m.architecture,
    layers: m.layers,
    heads: m.heads,
    kv_heads: m.kv_heads ?? m.heads,
    head_size: m.d_k,
    max_tokens: m.max_tokens,
    full_tokens: m.full_tokens,
    causal: Boolean(m.causal),
    mask: m.causal ? "causal" : "full",
    loaded: Boolean(m.loaded),
    loading: Boolean(m.loading),
  };
}

/** A model that only ever runs with its causal mask (GPT-2, the Llama decoder). */
export function isCausal(info) {
  return Boolean(info && (info.causal ?? info.mask === "causal"));
}

/**
 * The query heads of each key/value head (grouped-query attention: SmolLM2's 9 query heads read
 * 3 KV heads, 3 each); every head its own group when a model has as many KV heads as heads.
 */
export function kvGroups(heads, kvHeads) {
  const kv = kvHeads && heads % kvHeads === 0 ? kvHeads : heads;
  const per = heads / kv;
  return Array.from({ length: kv }, (_, g) => Array.from({ length: per }, (_, j) => g * per + j));
}

/** An array of a frame as nested JS arrays (rows), −∞ as null when `hiddenAsNull` (JSON's form). */
export function nested({ shape, data }, hiddenAsNull = false) {
  if (shape.length <= 1) return Array.from(data);
  const cols = shape[shape.length - 1];
  const rows = data.length / cols;
  const out = new Array(rows);
  // plain loops: Array.from(typed array) walks an iterator, several times slower for the
  // ~600,000 numbers of a 300-token sentence's two frames
  for (let i = 0, at = 0; i < rows; i++) {
    const row = new Array(cols);
    for (let j = 0; j < cols; j++, at++) {
      const x = data[at];
      row[j] = hiddenAsNull && x === -Infinity ? null : x;
    }
    out[i] = row;
  }
  if (shape.length === 2) return out;
  const inner = shape.slice(1);
  const per = inner.slice(0, -1).reduce((a, b) => a * b, 1);
  return Array.from({ length: shape[0] }, (_, h) => nestRows(out.slice(h * per, (h + 1) * per), inner));
}

function nestRows(rows, shape) {
  if (shape.length === 2) return rows;
  const per = rows.length / shape[0];
  return Array.from({ length: shape[0] }, (_, i) => nestRows(rows.slice(i * per, (i + 1) * per), shape.slice(1)));
}

/** A sentence frame in the JSON answer's form: nested arrays, hidden cells of `masked` as null. */
export function frameAsJson({ fields, arrays }) {
  const out = { ...fields };
  for (const [name, array] of Object.entries(arrays)) out[name] = nested(array, name === "masked");
  return out;
}

/**
 * The stages a view of one head asks for under the full mask: every one but `scaled` (and `masked`,
 * the very same numbers under the full mask), which the page makes from `scores` (scaledFrom),
 * 29% of the frame. A mean over heads or layers is the mean of each head's own scaled scores, not
 * its mean score divided by √d_k, so a mean view asks for every stage.
 */
export const FULL_STAGES = ["q", "k", "v", "scores", "weights", "output"];

/** Whether a view is one layer's one head (not a mean): its scaled scores are its scores / √d_k. */
export const oneHead = (req) => Number.isInteger(req.layer) && Number.isInteger(req.head);

/**
 * A head's scaled scores from its scores (n × n): each divided by √d_k, the very division
 * app/attention.py does in float64 (IEEE division and square root are exact to the last bit in
 * both), so the numbers are the server's own (tests/model/test_service.py holds it to that).
 */
export function scaledFrom(scores, dK) {
  const root = Math.sqrt(dK);
  return scores.map((row) => row.map((x) => x / root));
}

/** The full mask's view of one head in the JSON answer's form, its scaled (and masked) made here. */
export function fullFrom(frame) {
  const data = frameAsJson(frame);
  if (!data.scaled) {
    data.scaled = scaledFrom(data.scores, data.d_k);
    data.masked = data.scaled; // the full mask hides nothing (the same numbers, as the frame shares them)
  }
  return data;
}

/**
 * The stages asked for under the causal mask when the full mask's answer comes too: q, k, v,
 * scores and scaled are the same under both, and `masked` is the full answer's `scaled` with −∞
 * after each query's own token (causalMasked), so only weights and output need the server.
 */
export const CAUSAL_STAGES = ["weights", "output"];

/**
 * The causal mask's `masked` stage from the full mask's `scaled` (n × n, as frameAsJson gives it):
 * the very same numbers where a query may see the key (key j ≤ query i) and null (−∞) after,
 * which is how app/attention.py makes it (tests/model/test_service.py holds the server to it).
 */
export function causalMasked(scaled) {
  const out = new Array(scaled.length);
  for (let i = 0; i < scaled.length; i++) {
    const row = scaled[i];
    const masked = new Array(row.length);
    for (let j = 0; j < row.length; j++) masked[j] = j <= i ? row[j] : null;
    out[i] = masked;
  }
  return out;
}

/** The causal answer: the full one's fields and stages, its own weights and output, its masked made here. */
export function causalFrom(full, causalFrame) {
  return { ...full, ...frameAsJson(causalFrame), masked: causalMasked(full.scaled) };
}

/** Whether both masks' answer `result` has `mask`, or has left it for later (`later`: sentenceBothMasks). */
export function offers(result, mask) {
  return Boolean(result[mask]) || result.later === mask;
}

/** The most rows (tokens, or words when pieces are merged) the full and causal tables are compared side by side. */
export const COMPARE_MAX = 20;

/**
 * How many rows a sentence's comparison will have at the fewest, known before the model answers:
 * every run of characters between spaces is a word or more, and BERT adds [CLS] and [SEP]. (A run
 * the tokenizer drops, such as control characters alone, is why withCausal counts again.)
 */
export function fewestRows(sentence) {
  return sentence.split(/\s+/).filter(Boolean).length + 2;
}

/** A layer or head value from the URL or a picker: an integer ≥ 0, "mean", or null. */
export function parsePick(text) {
  if (text === "mean") return "mean";
  if (typeof text === "number") return Number.isInteger(text) && text >= 0 ? text : null;
  if (typeof text === "string" && /^\d{1,3}$/.test(text)) return Number(text);
  return null;
}

// ---- merging word pieces -----------------------------------------------------------------

/**
 * Groups of token indices, one per word: consecutive tokens with the same `words` index
 * (BERT's "token", "##ization"); special tokens ([CLS], [SEP]) are a group each.
 */
export function wordGroups(data) {
  const groups = [];
  let last = null;
  data.tokens.forEach((_, i) => {
    const w = data.words ? data.words[i] : null;
    if (w !== null && w !== undefined && last && last.word === w) last.members.push(i);
    else {
      last = { word: w ?? null, members: [i] };
      groups.push(last);
    }
    if (w === null || w === undefined) last = null;
  });
  return groups.map((g) => g.members);
}

export function identityGroups(n) {
  return Array.from({ length: n }, (_, i) => [i]);
}

/**
 * The word as typed in the sentence (via spans), or the joined pieces when spans are missing.
 * `chars`: the sentence as code points (the API's spans count code points, as Python does; a JS
 * string counts UTF-16 units, so "🍕".length is 2).
 */
function groupLabel(data, chars, members) {
  const first = data.spans?.[members[0]];
  const last = data.spans?.[members[members.length - 1]];
  if (first && last && chars) return chars.slice(first[0], last[1]).join("");
  return members.map((i) => data.tokens[i].replace(/^##/, "")).join("");
}

const meanRows = (rows, members) =>
  rows[members[0]].map((_, c) => members.reduce((s, i) => s + rows[i][c], 0) / members.length);

/**
 * The response seen word by word: a word's weight as a key is the SUM over its pieces (the
 * share of attention the whole word gets); as a query, the MEAN over its pieces' rows (so each
 * row still sums to 1). The output z of a word is the mean of its pieces' z, and q, k, v (and
 * their drawing) the mean of its pieces'. Only the weights are merged: scores before softmax
 * are not shares and do not add up, so the page shows the model's own tokens for steps 1–3.
 */
export function mergeView(data, drawn, sentence) {
  const groups = wordGroups(data);
  const chars = sentence ? Array.from(sentence) : null;
  const tokens = groups.map((m) => groupLabel(data, chars, m));
  const weights = groups.map((qi) =>
    groups.map((kj) => qi.reduce((s, a) => s + kj.reduce((t, b) => t + data.weights[a][b], 0), 0) / qi.length),
  );
  const masked = groups.map((qi) =>
    groups.map((kj) => (qi.every((a) => kj.every((b) => data.masked[a][b] === null)) ? null : 0)),
  );
  const pieces = groups.map((m) => m.map((i) => data.tokens[i]));
  return {
    ...data,
    tokens,
    weights,
    masked,
    scores: masked,
    scaled: masked,
    q: groups.map((m) => meanRows(data.q, m)),
    k: groups.map((m) => meanRows(data.k, m)),
    v: groups.map((m) => meanRows(data.v, m)),
    output: groups.map((m) => meanRows(data.output, m)),
    drawn: {
      q: groups.map((m) => meanRows(drawn.q, m)),
      k: groups.map((m) => meanRows(drawn.k, m)),
      v: groups.map((m) => meanRows(drawn.v, m)),
      output: groups.map((m) => meanRows(drawn.output, m)),
    },
    merged: { groups, pieces, rows: groups.map((qi) => qi.map((a) => data.weights[a])) },
  };
}

/** Rows and columns start..end of a view (for the 3D view of a long sentence). */
export function sliceView(view, start, end) {
  const rows = (m) => m.slice(start, end);
  const square = (m) => m.slice(start, end).map((r) => r.slice(start, end));
  const out = {
    ...view,
    tokens: rows(view.tokens),
    q: rows(view.q),
    k: rows(view.k),
    v: rows(view.v),
    output: rows(view.output),
    scores: square(view.scores),
    scaled: square(view.scaled),
    masked: square(view.masked),
    weights: square(view.weights),
  };
  if (view.drawn) {
    out.drawn = { q: rows(view.drawn.q), k: rows(view.drawn.k), v: rows(view.drawn.v), output: rows(view.drawn.output) };
  }
  return out;
}

/** "layer 3, head 1", "mean of layer 3's heads", … for notes and titles. */
export function pickText(layer, head) {
  if (layer === "mean" && head === "mean") return "the mean of all heads of all layers";
  if (layer === "mean") return `the mean of head ${head} over all layers`;
  if (head === "mean") return `the mean of layer ${layer}'s heads`;
  return `layer ${layer}, head ${head}`;
}
