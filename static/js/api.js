// The page's only door to the server: every request the page makes is a function of this file
// (tests/page/test_door.py holds it to that). Every number the page shows comes through here.
//
//   hand-set mode     listExamples, getExample, attention, attentionBothMasks, Recomputer
//   chapters          apiGet, apiPost (ctx.get / ctx.post), postLines (a stream of JSON lines: Write)
//   the real model    modelInfo, listModels, sentenceBothMasks, sentenceCausal, sentenceRows (a long
//                     sentence's rows around the focus, lod.js), allHeads
//   the classroom     call (rooms and saved lessons, with the teacher's key), getBlob (the quiz's CSV)
//   exports           getText (the viewer and the styles an offline file carries)
//
// Plain data in, plain data out: the view transforms of the model's answers are model.js's.

import { CAUSAL_STAGES, COMPARE_MAX, FULL_STAGES, asInfo, causalFrom, causalMasked, fewestRows, frameAsJson, fullFrom, oneHead, scaledFrom, wordGroups } from "./model.js";
import { isLong, longFrom, ROW_STAGES, SUMMARY_STAGES } from "./lod.js";

import { SOURCE_LANGUAGE, has, language, t } from "./i18n.js";

/**
 * The server's message `d` ({ loc, msg, type, ctx }) as the page's language says it: English is the
 * server's own words; another language has a message per error type a learner can meet (error.type.<type>
 * in the catalogs, filled with the error's field and its ctx numbers), else the server's words.
 */
function errorText(d, field) {
  const key = `error.type.${d.type}`;
  if (language() === SOURCE_LANGUAGE || typeof d.type !== "string" || !has(key)) return String(d.msg ?? "invalid input");
  const values = { field };
  for (const [name, value] of Object.entries(d.ctx ?? {})) if (typeof value === "number" || typeof value === "string") values[name] = value;
  try {
    return t(key, values);
  } catch {
    return String(d.msg ?? "invalid input"); // a value the message needs is missing: the server's words, not nothing
  }
}

/** An API error as { field, type, msg } items; field is "q", "k", "v", "tokens", "sentence", … or "body". */
function errorItems(status, body) {
  const detail = body && Array.isArray(body.detail) ? body.detail : null;
  if (!detail) return [{ field: "body", type: "status", msg: t("error.status", { status }) }];
  return detail.map((d) => {
    const loc = Array.isArray(d.loc) ? d.loc : [];
    const field = loc[0] === "body" && typeof loc[1] === "string" ? loc[1] : "body";
    return { field, type: String(d.type ?? ""), msg: errorText(d, field) };
  });
}

/** The ApiError of a refused answer, with the server's own words when it sent them. */
async function refusal(res) {
  const json = await res.json().catch(() => null);
  return new ApiError(res.status, errorItems(res.status, json));
}

async function getJson(url, signal) {
  const res = await fetch(url, { headers: { accept: "application/json" }, signal });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.json();
}

export function listExamples(signal) {
  return getJson("/api/examples", signal);
}

export function getExample(id, signal) {
  return getJson(`/api/examples/${encodeURIComponent(id)}`, signal);
}

/**
 * The example the page opened with, as GET /api/examples/ID answers it, when the page carries it
 * (templates/index.html: the default example); null otherwise. A fresh copy each time.
 */
export function pageExample(id) {
  const node = document.getElementById("first-example");
  if (!node) return null;
  try {
    const ex = JSON.parse(node.textContent);
    return ex?.id === id ? ex : null;
  } catch {
    return null;
  }
}

/**
 * Every stage for one input and one mask.
 * Resolves to { ok: true, data } or { ok: false, errors }; rejects only on abort or network failure.
 */
export function attention(input, mask, signal) {
  return postJson("/api/attention", { tokens: input.tokens, q: input.q, k: input.k, v: input.v, mask }, signal);
}

/** Seconds the server asks a client to wait (Retry-After) before asking again, capped. */
const MAX_RETRY_SECONDS = 5;
const RETRIES = 2;

/** fetch(), asked again (up to RETRIES times) when the server answers 503 with a Retry-After: it is busy. */
async function fetchPatiently(url, init) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, init);
    const after = Number(res.headers.get("retry-after"));
    if (res.status !== 503 || !(after > 0) || attempt >= RETRIES) return res;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, Math.min(after, MAX_RETRY_SECONDS) * 1000);
      init.signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new DOMException("aborted", "AbortError"));
      });
    });
  }
}

export const FRAME_TYPE = "application/x-attention-frame";

/**
 * A binary frame (app/frame.py) read: { fields, arrays: { name: { shape, data } } }, data a
 * Float64Array or Float32Array over the frame's own bytes (no copy).
 */
export function decodeFrame(buffer) {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
  if (magic !== "ATF1") throw new Error("not an attention frame");
  const size = view.getUint32(4, true);
  const fields = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, size)));
  const start = 8 + size;
  const arrays = {};
  for (const [name, spec] of Object.entries(fields.arrays ?? {})) {
    const count = spec.shape.reduce((a, b) => a * b, 1);
    const Type = spec.dtype === "float32" ? Float32Array : Float64Array;
    arrays[name] = { shape: spec.shape, data: new Type(buffer, start + spec.offset, count) };
  }
  delete fields.arrays;
  return { fields, arrays };
}

/**
 * POST a JSON payload asking for a binary frame; resolves to { ok: true, data: { fields, arrays } }
 * (see decodeFrame) or { ok: false, errors } as postJson; a busy server (503) is asked again.
 */
export async function postFrame(url, payload, signal) {
  const res = await fetchPatiently(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: FRAME_TYPE },
    body: JSON.stringify(payload),
    signal,
  });
  if (res.ok && (res.headers.get("content-type") ?? "").startsWith(FRAME_TYPE)) {
    return { ok: true, data: decodeFrame(await res.arrayBuffer()) };
  }
  let json = null;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  return { ok: false, status: res.status, errors: errorItems(res.status, json) };
}

/**
 * POST a JSON payload; resolves to { ok: true, data } or { ok: false, errors }, rejects only on
 * abort or network failure. A busy server (503 with Retry-After) is asked again.
 */
export async function postJson(url, payload, signal) {
  const res = await fetchPatiently(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(payload),
    signal,
  });
  let json = null;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  if (res.ok && json) return { ok: true, data: json };
  return { ok: false, status: res.status, errors: errorItems(res.status, json) };
}

/** The input under both masks (the page shows one and compares with the other). */
export async function attentionBothMasks(input, signal) {
  const [full, causal] = await Promise.all([attention(input, "full", signal), attention(input, "causal", signal)]);
  if (!full.ok) return full;
  if (!causal.ok) return causal;
  return { ok: true, data: { full: full.data, causal: causal.data } };
}

/**
 * Live recompute for typing: waits `delay` ms after the last call, cancels the request in
 * flight when a newer one starts, and only ever delivers the newest answer (a slow old
 * response can never overwrite a newer one).
 */
/** The outcome of a request that never reached the server (a network error): the page says so. */
export function unreachable(err) {
  return { ok: false, errors: [{ field: "body", msg: t("error.unreachable", { reason: err.message }) }] };
}

export class Recomputer {
  /** `fetcher(input, signal)` resolves to an outcome (default: the hand-set input under both masks). */
  constructor(onResult, delay = 180, fetcher = attentionBothMasks) {
    this.onResult = onResult;
    this.delay = delay;
    this.fetcher = fetcher;
    this.timer = 0;
    this.seq = 0;
    this.controller = null;
  }

  schedule(input, immediate = false) {
    clearTimeout(this.timer);
    const seq = ++this.seq;
    const snapshot = structuredClone(input);
    const go = () => this.run(snapshot, seq);
    if (immediate) go();
    else this.timer = setTimeout(go, this.delay);
    return seq;
  }

  /** Forget what is scheduled or in flight (its answer will be dropped). */
  cancel() {
    clearTimeout(this.timer);
    this.seq += 1;
    if (this.controller) this.controller.abort();
    this.controller = null;
  }

  async run(input, seq) {
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    let outcome;
    try {
      outcome = await this.fetcher(input, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) return;
      outcome = unreachable(err);
    }
    if (seq !== this.seq) return; // a newer request has been scheduled since
    this.controller = null;
    this.onResult(outcome);
  }
}

/** A refused or failed request of a chapter: `errors` as { field, msg } items (see errorItems). */
export class ApiError extends Error {
  constructor(status, errors) {
    super(errors.map((e) => e.msg).join(" ") || t("error.status", { status }));
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
  }
}

/** POST JSON for a chapter: resolves to the answer, throws ApiError on a 4xx/5xx. */
export async function apiPost(path, body, signal) {
  const outcome = await postJson(path, body, signal);
  if (outcome.ok) return outcome.data;
  throw new ApiError(outcome.status, outcome.errors);
}

/** GET JSON for a chapter: resolves to the answer, throws ApiError on a 4xx/5xx. */
export async function apiGet(path, signal) {
  const res = await fetch(path, { headers: { accept: "application/json" }, signal });
  let json = null;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  if (res.ok && json !== null) return json;
  throw new ApiError(res.status, errorItems(res.status, json));
}

// ---- the real model (sentence mode) --------------------------------------------------------

/**
 * What the page knows of a model: GET /api/model (the server's own), or the entry `id` of GET
 * /api/models (the model picker's choice) in /api/model's shape plus id, kv_heads and causal.
 * `load` starts loading the weights in the background.
 */
export async function modelInfo(load = false, signal, id = null) {
  if (id) {
    const entry = (await listModels(signal, load ? id : null)).find((m) => m.id === id);
    if (!entry) throw new Error(`/api/models: no model ${id}`);
    return asInfo(entry);
  }
  const res = await fetch(`/api/model${load ? "?load=true" : ""}`, { headers: { accept: "application/json" }, signal });
  if (!res.ok) throw new Error(`/api/model: ${res.status}`);
  return res.json();
}

/** GET /api/models: the models the server offers (`load`: an id to start loading). */
export async function listModels(signal, load = null) {
  const url = load ? `/api/models?load=${encodeURIComponent(load)}` : "/api/models";
  const res = await fetch(url, { headers: { accept: "application/json" }, signal });
  if (!res.ok) throw new Error(`/api/models: ${res.status}`);
  return (await res.json()).models.filter((m) => m.available !== false);
}

/**
 * One layer/head (or "mean") of a sentence under one mask, as a binary frame (no JSON to write,
 * compress or parse): resolves to { ok: true, frame: { fields, arrays } } (typed arrays, see
 * decodeFrame) or { ok: false, errors }. `stages`: the arrays wanted (default: all);
 * `dtype`: "float32" where the numbers are only drawn, "float64" where digits are printed.
 */
export async function sentenceFrame(req, mask, { stages = null, dtype = "float64" } = {}, signal) {
  const body = { sentence: req.sentence, layer: req.layer, head: req.head };
  if (mask) body.mask = mask; // else the model's own
  if (req.model) body.model = req.model;
  if (stages) body.stages = stages;
  if (dtype !== "float64") body.dtype = dtype;
  const outcome = await postFrame("/api/attention", body, signal);
  return outcome.ok ? { ok: true, frame: outcome.data } : outcome;
}

/** An answer's frame as the page keeps it: the JSON answer's form, or a long sentence's (lod.js). */
const answerOf = (frame) => (isLong(frame.fields) ? longFrom(frame) : frameAsJson(frame));

/** One layer/head (or "mean") of a sentence under one mask, in the JSON answer's form. */
async function sentenceAttention(req, mask, signal) {
  const outcome = await sentenceFrame(req, mask, {}, signal);
  return outcome.ok ? { ok: true, data: answerOf(outcome.frame) } : outcome;
}

/**
 * A decoder's view of one head: every stage but `scaled` and `masked` (made here, as for the full
 * mask: scaledFrom, causalMasked) for a sentence the server sends whole, or, for a long one, the
 * rows around the start and the table in blocks (lod.js): the page does not know the sentence's
 * length before the answer, so it names both and the answer has what its detail holds.
 */
async function decoderView(req, signal) {
  if (!oneHead(req)) return sentenceAttention(req, "causal", signal);
  const outcome = await sentenceFrame(req, "causal", { stages: [...ROW_STAGES, ...SUMMARY_STAGES] }, signal);
  if (!outcome.ok) return outcome;
  if (isLong(outcome.frame.fields)) return { ok: true, data: longFrom(outcome.frame) };
  const data = frameAsJson(outcome.frame);
  data.scaled = scaledFrom(data.scores, data.d_k);
  data.masked = causalMasked(data.scaled);
  return { ok: true, data };
}

/**
 * More rows of a long sentence's view (`rows`: query indices, ≤ 64): their stages over every key,
 * as a frame for lod.js withRows; { ok: true, frame } or { ok: false, errors }.
 */
export function sentenceRows(req, rows, signal) {
  const body = { sentence: req.sentence, layer: req.layer, head: req.head, detail: "summary", rows, stages: ROW_STAGES };
  if (req.model) body.model = req.model;
  return postFrame("/api/attention", body, signal).then((outcome) => (outcome.ok ? { ok: true, frame: outcome.data } : outcome));
}

/** The full mask's answer: one head's without its scaled scores (FULL_STAGES), a mean's whole. */
function fullFrame(req, signal) {
  return sentenceFrame(req, "full", { stages: oneHead(req) ? FULL_STAGES : null }, signal);
}

/**
 * The sentence under both masks, like the hand-set mode (the page shows one and compares), in
 * two frames asked at once: the full mask's stages (FULL_STAGES), and under the causal one only the
 * weights and the output (CAUSAL_STAGES; the server runs the model once for both). A decoder (GPT-2,
 * SmolLM2: `req.causal`) has only its causal mask: `full` is then null. `req.causal` null: not
 * known yet, so the model's own mask is asked first and its answer says which it is.
 *
 * A sentence too long to compare side by side, shown under the full mask (`req.mask`), gets its
 * full answer alone: `later: "causal"` says the causal one is asked for when the page switches to
 * it (attention/source.js fetchLater, sentenceCausal). For 345 tokens that is 1.05 MB the view no
 * longer waits for, and a request fewer before the overview's.
 */
export async function sentenceBothMasks(req, signal) {
  if (req.causal === null) {
    // a model whose facts have not arrived yet (a link naming it): its own mask first
    const own = await sentenceAttention(req, null, signal);
    if (!own.ok || own.data.mask === "causal") return own.ok ? { ok: true, data: { full: null, causal: own.data } } : own;
    return withCausal(req, own.data, signal);
  }
  if (req.causal || req.kind === "gpt2") {
    const causal = await decoderView(req, signal);
    return causal.ok ? { ok: true, data: { full: null, causal: causal.data } } : causal;
  }
  if (req.mask === "full" && fewestRows(req.sentence) > COMPARE_MAX) {
    const full = await fullFrame(req, signal);
    return full.ok ? withCausal(req, fullFrom(full.frame), signal) : full;
  }
  const [full, causal] = await Promise.all([fullFrame(req, signal), sentenceFrame(req, "causal", { stages: CAUSAL_STAGES }, signal)]);
  if (!full.ok) return full;
  if (!causal.ok) return causal;
  const fullData = fullFrom(full.frame);
  return { ok: true, data: { full: fullData, causal: causalFrom(fullData, causal.frame) } };
}

/**
 * Both masks' answers once the full one is in: the causal one asked now when the comparison
 * will show it (or the page shows that mask), else left for later ({ causal: null, later: "causal" }).
 */
async function withCausal(req, full, signal) {
  if (req.mask !== "causal" && wordGroups(full).length > COMPARE_MAX) return { ok: true, data: { full, causal: null, later: "causal" } };
  const causal = await sentenceCausal(req, full, signal);
  return causal.ok ? { ok: true, data: { full, causal: causal.data } } : causal;
}

/**
 * The causal answer for a sentence whose full answer `full` the page has: its weights and output
 * from the server (CAUSAL_STAGES), at the layer and head of `full`; { ok, data } or { ok: false, errors }.
 */
export async function sentenceCausal(req, full, signal) {
  const at = { ...req, layer: full.layer, head: full.head };
  const causal = await sentenceFrame(at, "causal", { stages: CAUSAL_STAGES }, signal);
  return causal.ok ? { ok: true, data: causalFrom(full, causal.frame) } : causal;
}

/**
 * POST /api/overview: every layer × head summarised (pooled[layer][head][a][b] in thousandths over
 * blocks of tokens `edges`, entropy, distance, top links), for sentences up to the model's limit.
 */
export function allHeads(sentence, mask, signal, model = null) {
  return postJson("/api/overview", model ? { sentence, mask, model } : { sentence, mask }, signal);
}

// ---- streams of JSON lines (Write) ---------------------------------------------------------

/** Read an NDJSON response body line by line: `onLine(object)` for each; resolves at the end. */
async function readLines(body, onLine) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) rest += decoder.decode(value, { stream: true });
    let nl = rest.indexOf("\n");
    while (nl >= 0) {
      const line = rest.slice(0, nl).trim();
      rest = rest.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
      nl = rest.indexOf("\n");
    }
    if (done) break;
  }
  if (rest.trim()) onLine(JSON.parse(rest));
}

/**
 * POST JSON asking for a stream of JSON lines (application/x-ndjson): `onLine(object)` for each
 * line as it arrives; resolves at the stream's end, throws ApiError on a 4xx/5xx.
 */
export async function postLines(path, body, signal, onLine) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/x-ndjson" },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw await refusal(res);
  await readLines(res.body, onLine);
}

// ---- the classroom ---------------------------------------------------------------------------

/** The headers of a classroom request: its key (a room's, the teacher's) in Authorization, never in a URL. */
function keyed(secret) {
  return secret ? { authorization: `Bearer ${secret}` } : {};
}

/**
 * A call of the classroom's API (rooms, saved lessons): `body` sent as JSON, `secret` as the
 * bearer key, `ifMatch` as If-Match. Resolves to the JSON answer (null for 204), throws ApiError on
 * a 4xx/5xx (a 412's carries .etag, the version the server holds now).
 */
export async function call(method, path, { body, secret, ifMatch } = {}) {
  const headers = keyed(secret);
  if (body !== undefined) headers["content-type"] = "application/json";
  if (ifMatch) headers["if-match"] = ifMatch; // a lesson's edit names the version it was made from
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) {
    const error = await refusal(res);
    error.etag = res.headers.get("etag"); // a 412's: the version the server holds now
    throw error;
  }
  if (res.status === 204) return null;
  return res.json();
}

/** GET a file the classroom's API makes (the quiz's CSV) as a Blob, with the key in a header. */
export async function getBlob(path, { secret } = {}) {
  const res = await fetch(path, { headers: keyed(secret) });
  if (!res.ok) throw await refusal(res);
  return res.blob();
}

// ---- exports ---------------------------------------------------------------------------------

/** GET a text file of the server's (the bundled viewer, the page's styles, for an offline file). */
export async function getText(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.text();
}
