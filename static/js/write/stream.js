// A writing as it streams. POST /api/generate with `accept: application/x-ndjson` answers one
// JSON line per written token (the first also carries the prompt's tokens) and a last line with
// `done` (reason, seconds, cache_bytes): docs/decoder.md. api.js reads such a stream; these
// functions gather its lines into an answer of the same shape as a whole one (load()'s).
//
// A classroom follows a writing through the chapter's parameters, not through this stream: the
// writing page sets `live` (write/live.js) on every token, and the room's state carries it.

import { postLines } from "../api.js";

/** An answer before its first line: the decoder's `info`, no tokens yet. */
export function emptyAnswer(info) {
  return { info, prompt_tokens: null, tokens: [] };
}

/** Add one line of a stream to `answer`; true when it is the last (line.reason says why it ended). */
export function addLine(answer, line) {
  if (line.done) {
    Object.assign(answer, { cache_bytes: line.cache_bytes, seconds: line.seconds });
    return true;
  }
  if (line.prompt_tokens) answer.prompt_tokens = line.prompt_tokens;
  answer.tokens.push(line);
  return false;
}

/** POST `request` to /api/generate as a stream: `onLine(line)` for each line; throws ApiError with the server's words on a refusal. */
export function streamWriting(request, signal, onLine) {
  return postLines("/api/generate", request, signal, onLine);
}
