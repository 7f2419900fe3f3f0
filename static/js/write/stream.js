// A writing as it streams. POST /api/generate with `accept: application/x-ndjson` answers one
// JSON line per written token (the first also carries the prompt's tokens) and a last line with
// `done` (reason, seconds, cache_bytes): docs/decoder.md. api.js reads such a stream; these
// functions gather its lines into an answer of the same shape as a whole one (load()'s).
//
// Following a writing token by token (a classroom's followers): the page that writes tells each
// line of its stream with a DOM event on window, and a page that follows hands the lines it gets
// to its Write chapter with another; the follower then draws every token as it comes, without
// asking the server, and keeps the whole answer for the snapshot that ends the writing.
//
//   "write:token"  (sent)      detail { request, line }: request = the POST /api/generate body,
//                              line = one line of its stream as received; the last has line.done
//   "write:follow" (listened)  detail { request, line }: the same, on a following page

import { postLines } from "../api.js";

export const TOKEN_EVENT = "write:token";
export const FOLLOW_EVENT = "write:follow";

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
