// The arrays of an answer that can be exported, and their rows and columns as labels.
// Every number is the server's own, written with the shortest text that reads back the same.

/** Names of the numeric arrays (1-D, 2-D, or 3-D with a leading head axis) in an answer, in its order. */
export function arrayNames(answer) {
  if (!answer) return [];
  return Object.keys(answer).filter((name) => depth(answer[name]) >= 1);
}

/** The words of an answer: `tokens`, or `words` where a chapter names them so. */
function labelsOf(answer) {
  const words = Array.isArray(answer.tokens) ? answer.tokens : Array.isArray(answer.words) ? answer.words : null;
  return words && words.every((w) => typeof w === "string") ? words : null;
}

function depth(x) {
  let d = 0;
  while (Array.isArray(x)) {
    if (!x.length) return 0;
    if (x.every((e) => e === null || typeof e === "number")) return d + 1;
    x = x[0];
    d += 1;
  }
  return 0;
}

/** { heads: [matrix, …] | null, matrix (the first head or the only one), rows, cols } for one array. */
export function arrayTable(answer, name) {
  const d = depth(answer[name]);
  const a = d === 1 ? [answer[name]] : answer[name]; // a 1-D array is one row
  const tokens = d === 1 ? [name] : labelsOf(answer);
  const threeD = d === 3;
  const heads = threeD ? a : [a];
  const first = heads[0];
  const n = first.length;
  const m = first[0].length;
  const rows = tokens && tokens.length === n ? tokens : first.map((_, i) => String(i));
  const cols = tokens && tokens.length === m && m === n ? tokens : first[0].map((_, j) => String(j));
  if (d === 1) return { heads: null, matrix: first, rows, cols, square: false };
  return { heads: threeD ? heads : null, matrix: first, rows, cols, square: m === n && Boolean(tokens) };
}

/**
 * A word as a picture can show it: each control character (U+0000–U+001F and U+007F, which a
 * model's tokenizer can produce from ordinary text) as its visible Unicode "control picture"
 * (␀ … ␟, ␡). XML 1.0 forbids most of them, so an SVG holding them raw would not even parse.
 */
export function printable(label) {
  return String(label).replace(/[\u0000-\u001f\u007f]/g, (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
}

/** The number as text: null (−∞ in the API) as "-inf". */
export function numberText(x) {
  return x === null || x === undefined ? "-inf" : String(x);
}
