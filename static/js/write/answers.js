// What the Write chapter keeps between its loads, in this one module: the written answers this
// page has (by the parameters that asked for them: a streamed answer is reused by load(), so
// stepping through the tokens or a room's snapshot at the end of a writing asks the server
// nothing) and the decoder's entry of GET /api/models (its layers, heads, …).

import { ApiError, apiGet } from "../api.js";
import { t } from "../i18n.js";
import { DECODER, keyOf } from "./params.js";

const answers = new Map(); // keyOf(params) → a written answer ({ info, prompt_tokens, tokens, … })
const decoder = { info: null, at: 0, asking: null }; // the decoder's entry, when it came, the request for it
const DECODER_MS = 10_000; // a loaded decoder's facts are asked again after this (not on every token followed)
const LOADING_MS = 1_000; // while its weights load: again after this (whether it is loaded yet)

/** The answer kept for `params`, or null. */
export function keptAnswer(params) {
  return answers.get(keyOf(params)) ?? null;
}

/** Keep `answer` as the one written under `params`. */
export function keepAnswer(params, answer) {
  answers.set(keyOf(params), answer);
}

/**
 * The decoder's entry of GET /api/models (layers, heads, kv_heads, d_k, loaded). One request at a
 * time, not tied to a load: the writing page loads the chapter again on every streamed token, and
 * each load's own request, cut off by the next token's load before its answer came, asked again
 * and again (17 requests in one 16-token writing, holding up the room's view behind them).
 */
export function decoderInfo() {
  const fresh = decoder.info && performance.now() - decoder.at < (decoder.info.loaded ? DECODER_MS : LOADING_MS);
  if (fresh) return Promise.resolve(decoder.info);
  decoder.asking ??= apiGet("/api/models")
    .then((all) => {
      const info = all.models.find((m) => m.id === DECODER);
      if (!info) throw new ApiError(503, [{ field: "model", type: "no_decoder", msg: t("write.noDecoder") }]);
      Object.assign(decoder, { info, at: performance.now() });
      return info;
    })
    .finally(() => {
      decoder.asking = null;
    });
  return decoder.asking;
}
