// What the Write chapter keeps between its loads, in this one module: the written answers this
// page has (by the parameters that asked for them: a streamed answer is reused by load(), so
// stepping through the tokens or a room's snapshot at the end of a writing asks the server
// nothing) and the decoder's entry of GET /api/models (its layers, heads, …).

import { ApiError } from "../api.js";
import { DECODER, keyOf } from "./params.js";

const answers = new Map(); // keyOf(params) → a written answer ({ info, prompt_tokens, tokens, … })
const decoder = { info: null, at: 0 }; // the decoder's entry once loaded, and when it was asked for
const DECODER_MS = 10_000; // a loaded decoder's facts are asked again after this (not on every token followed)

/** The answer kept for `params`, or null. */
export function keptAnswer(params) {
  return answers.get(keyOf(params)) ?? null;
}

/** Keep `answer` as the one written under `params`. */
export function keepAnswer(params, answer) {
  answers.set(keyOf(params), answer);
}

/** The decoder's entry of GET /api/models (layers, heads, kv_heads, d_k, loaded); `get` = ctx.get. */
export async function decoderInfo(get) {
  if (decoder.info && performance.now() - decoder.at < DECODER_MS) return decoder.info;
  const all = await get("/api/models");
  const info = all.models.find((m) => m.id === DECODER);
  if (!info) throw new ApiError(503, [{ field: "model", msg: "this server has no decoder model" }]);
  if (info.loaded) Object.assign(decoder, { info, at: performance.now() }); // loading: ask again next time
  return info;
}
