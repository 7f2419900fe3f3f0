// The Write chapter's parameters (chapters/writing.js `params`, all strings, in the URL and the
// room's state) read as numbers: the POST /api/generate request they ask for, the key under
// which its written answer is kept, and which written token they show. Pure: no DOM, no state.

export const DECODER = "smollm2-135m";
export const MAX_TOKENS = 64;
const DRAW = 7; // the fixed random draw of a sampled write, so every page writes the same tokens

/** `s` as an integer, or `d` when it is not one. */
export const int = (s, d) => (Number.isInteger(Number(s)) && String(s).trim() !== "" ? Number(s) : d);
/** `s` as a finite number, or `d` when it is not one. */
export const num = (s, d) => (Number.isFinite(Number(s)) && String(s).trim() !== "" ? Number(s) : d);

/** temperature, top-k and top-p of a params object ("used" = the ones the written tokens were drawn with). */
export function settingsOf(params, used = false) {
  if (used) {
    const [t, k, p] = String(params.used || "0,0,1").split(",");
    return { temperature: num(t, 0), topK: int(k, 0), topP: num(p, 1) };
  }
  return { temperature: num(params.temp, 0), topK: int(params.topk, 0), topP: num(params.topp, 1) };
}

/** The POST /api/generate body that writes `n` tokens under `params`. */
export function requestOf(params, n) {
  const s = settingsOf(params, true);
  return {
    model: DECODER,
    prompt: params.prompt,
    max_new_tokens: n,
    temperature: s.temperature,
    top_k: s.topK,
    top_p: s.topP,
    seed: DRAW,
    layer: int(params.layer, 5),
    head: int(params.head, 0),
  };
}

/** What tells one written answer from another: the parameters that change what the server writes. */
export function keyOf(params) {
  return JSON.stringify([params.prompt, int(params.n, 0), params.used, int(params.layer, 5), int(params.head, 0)]);
}

/** The written token shown now: params.at, else the last (-1: nothing written). */
export function atOf(answer, params) {
  const n = answer.tokens.length;
  if (!n) return -1;
  const at = int(params.at, n - 1);
  return Math.max(0, Math.min(n - 1, at));
}

/** The tokens in the cache when token `at` was chosen: the prompt and the tokens written before it. */
export function cacheTokens(answer, at) {
  return [...answer.prompt_tokens, ...answer.tokens.slice(0, at).map((t) => t.token)];
}

/**
 * What the panel shows of `answer` at written token `at`: that token's line (its candidates, its
 * query's attention over the cache) and the cache's tokens when it was chosen. Before anything is
 * written (`at` −1), the model has still read the prompt: the line of the token it would write
 * next (`answer.next`) over the prompt's tokens (`next`: true). null when there is neither.
 */
export function lookAt(answer, at) {
  if (at >= 0 && answer.tokens[at]) return { t: answer.tokens[at], cache: cacheTokens(answer, at), next: false };
  if (answer.next && answer.prompt_tokens) return { t: answer.next, cache: answer.prompt_tokens, next: true };
  return null;
}

/** lookAt() at the token `params` show. */
export const shownOf = (answer, params) => lookAt(answer, atOf(answer, params));
