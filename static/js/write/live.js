// The tokens a page is writing, as one chapter parameter (`live`), so that a classroom's followers
// see each token as it arrives without running the model: the presenter's Write chapter sets it on
// every streamed token (the room's state carries it, a late joiner gets it too) and clears it when
// the stream ends (then `n` tells every page how many were written, and each loads them once).
//
// The value is JSON: { s: the prompt, p: tokens in the prompt, t: [[id, text], …] }. Room parameters
// are at most MAX_CHARS long: past that the prompt keeps its last words and then the oldest tokens
// keep their ids and lose their text (both shown as "…").

const MAX_CHARS = 1900; // under the room's MAX_PARAM_CHARS (2000) and the page's state.js MAX_PARAM

/** `tokens` (stream lines: { id, token }), the prompt and its token count, as a `live` parameter. */
export function encodeLive(tokens, prompt, promptTokens) {
  const t = tokens.map((x) => [x.id, x.token]);
  const value = (s) => JSON.stringify({ s, p: promptTokens, t });
  let s = prompt.length > 300 ? `…${prompt.slice(-300)}` : prompt;
  let out = value(s);
  if (out.length > MAX_CHARS) out = value((s = `…${prompt.slice(-40)}`));
  for (let i = 0; out.length > MAX_CHARS && i < t.length; i++) {
    t[i] = [t[i][0], null];
    out = value(s);
  }
  return out;
}

/** A `live` parameter read back: { prompt, promptTokens, tokens: [{ id, token }] }, or null (none, or not one of ours). */
export function decodeLive(value) {
  if (!value) return null;
  try {
    const v = JSON.parse(value);
    if (!v || !Array.isArray(v.t)) return null;
    const tokens = v.t
      .filter((x) => Array.isArray(x) && Number.isInteger(x[0]))
      .map(([id, token]) => ({ id, token: typeof token === "string" ? token : "…" }));
    return { prompt: typeof v.s === "string" ? v.s : "", promptTokens: Number.isInteger(v.p) ? v.p : 0, tokens };
  } catch {
    return null;
  }
}
