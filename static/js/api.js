// The page's only door to the server. Every number the page shows comes through here.

/** An API error as { field, msg } items; field is "q", "k", "v", "tokens" or "body". */
function errorItems(status, body) {
  const detail = body && Array.isArray(body.detail) ? body.detail : null;
  if (!detail) return [{ field: "body", msg: `The server answered ${status}.` }];
  return detail.map((d) => {
    const loc = Array.isArray(d.loc) ? d.loc : [];
    const field = loc[0] === "body" && typeof loc[1] === "string" ? loc[1] : "body";
    return { field, msg: String(d.msg ?? "invalid input") };
  });
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
  return { ok: false, errors: [{ field: "body", msg: `Could not reach the server (${err.message}).` }] };
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
    super(errors.map((e) => e.msg).join(" ") || `The server answered ${status}.`);
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
