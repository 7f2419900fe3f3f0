// Tokens for a typed sentence. Until a real model is wired in, each word gets small
// made-up 2-D vectors derived from a hash of the word: the same word always gets the same
// numbers, so a link with ?sentence=... reproduces the view. The user can then edit them.
// These are the only numbers the page makes up itself; attention is still computed by the API.

export const MAX_WORDS = 12;

function fnv1a(text) {
  let h = 0x811c9dc5;
  for (const ch of text) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A number in −2..2 in steps of 0.5, from the word, the matrix and the coordinate. */
function starter(word, which, index) {
  return ((fnv1a(`${which}:${index}:${word.toLowerCase()}`) % 9) - 4) / 2;
}

export function words(sentence) {
  return sentence
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, MAX_WORDS)
    .map((w) => w.slice(0, 100));
}

export function inputFromSentence(sentence, d = 2) {
  const tokens = words(sentence);
  const make = (which) => tokens.map((w) => Array.from({ length: d }, (_, i) => starter(w, which, i)));
  return { tokens, q: make("q"), k: make("k"), v: make("v") };
}
