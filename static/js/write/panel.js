// The Write chapter's panel (chapters/writing.js mounts it): the prompt and its buttons, the
// written text (a button per token), the ten candidates as bars under the sampling knobs, the
// layer and head pickers, the cache's size table, the cache's rows with the newest query's
// attention, and the 3D cache (cachescene.js). Writing streams here (stream.js): each token goes
// to the room first (the chapter parameter `live`: no model runs for the class), then is drawn
// here, and the whole answer is kept (answers.js) under the parameters set at the end. Before
// anything is written it shows the prompt the model has read (its tokens, the cache's rows) and the
// token it would write next (its query's attention, the candidates). Its words are the catalogs'
// write.… messages, in the page's language.

import { el } from "../dom.js";
import { predictBox, quote } from "../chapters/widgets.js";
import { decimal, grouped, percent, t } from "../i18n.js";
import { keepAnswer } from "./answers.js";
import { CacheScene } from "./cachescene.js";
import { decodeLive, encodeLive } from "./live.js";
import { MAX_TOKENS, atOf, int, lookAt, num, requestOf } from "./params.js";
import { cacheBytes, chances, headGroups, visible } from "./sampling.js";
import { addLine, emptyAnswer, streamWriting } from "./stream.js";

/** A bar's width as CSS reads it (never in the page's language). */
const width = (p) => `${(100 * p).toFixed(1)}%`;
/** A share as the page's language writes it ("12.3%", "12,3 %"). */
const pct = (p) => percent(p, 1);

/** `bytes` in megabytes, one decimal at most ("377.5 MB"), as the page's language writes them. */
export const sizeOf = (bytes) => t("chapter.writing.mb", { n: decimal(bytes / 1e6, 0, 1) });

/** The Write panel and the 3D cache: built once per visit, redrawn by update(). */
export class WritePanel {
  /** @param steps the chapter's steps (their questions, and which comes before the size step) */
  constructor(ctx, steps) {
    this.ctx = ctx;
    this.steps = steps;
    this.answer = null;
    this.live = null; // the answer being streamed
    this.controller = null;
    this.scene = ctx.stage ? new CacheScene(ctx.stage) : null;
    const p = ctx.panel;
    p.classList.add("wr-panel");
    this.ask = el("div", { className: "wr-ask", dataset: { testid: "write-ask" } });
    this.status = el("p", { className: "wr-status", role: "status", dataset: { testid: "write-status" } });
    const form = el("form", { className: "wr-form", dataset: { testid: "write-form" } });
    this.prompt = el("input", { type: "text", maxlength: "40000", dir: "auto", "aria-label": t("write.prompt"), dataset: { testid: "write-prompt" } });
    this.count = el("input", { type: "number", min: "1", max: String(MAX_TOKENS), value: "16", "aria-label": t("write.count"), dataset: { testid: "write-count" } });
    this.go = el("button", { type: "submit", dataset: { testid: "write-go" } }, t("write.go"));
    this.one = el("button", { type: "button", dataset: { testid: "write-one" } }, t("write.one"));
    this.stop = el("button", { type: "button", dataset: { testid: "write-stop" }, disabled: "" }, t("write.stop"));
    form.append(this.prompt, el("span", { className: "wr-buttons" }), this.go, this.count, this.one, this.stop);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.write(Math.min(MAX_TOKENS, Math.max(1, int(this.count.value, 16))), true);
    });
    this.one.addEventListener("click", () => this.write(Math.min(MAX_TOKENS, int(ctx.params.n, 0) + 1), ctx.params.prompt !== this.prompt.value));
    this.stop.addEventListener("click", () => this.controller?.abort());

    const nav = el("div", { className: "wr-nav" });
    this.back = el("button", { type: "button", "aria-label": t("write.prev"), dataset: { testid: "write-prev" } }, "‹");
    this.fwd = el("button", { type: "button", "aria-label": t("write.next"), dataset: { testid: "write-next" } }, "›");
    this.text = el("p", { className: "wr-text", dataset: { testid: "write-text" } });
    nav.append(this.back, this.text, this.fwd);
    this.back.addEventListener("click", () => this.goTo(this.at() - 1));
    this.fwd.addEventListener("click", () => this.goTo(this.at() + 1));

    this.cands = el("ol", { className: "wr-cands", dataset: { testid: "write-cands" }, "aria-label": t("write.cands") });
    this.size = el("table", { className: "wr-size", dataset: { testid: "write-size" } });

    const knobs = el("div", { className: "wr-knobs" });
    this.temp = el("input", { type: "range", min: "0", max: "2", step: "0.1", "aria-label": t("write.temperature"), dataset: { testid: "write-temp" } });
    this.topk = el("input", { type: "number", min: "0", max: "10", step: "1", "aria-label": t("write.topkLabel"), dataset: { testid: "write-topk" } });
    this.topp = el("input", { type: "range", min: "0.05", max: "1", step: "0.05", "aria-label": "top-p", dataset: { testid: "write-topp" } });
    this.knobText = el("span", { className: "wr-knob-text", dataset: { testid: "write-knobs" } });
    knobs.append(el("label", {}, `${t("write.temperature")} `), this.temp, el("label", {}, " top-k "), this.topk, el("label", {}, " top-p "), this.topp, this.knobText);
    for (const input of [this.temp, this.topk, this.topp]) {
      input.addEventListener("input", () => this.drawBars());
      input.addEventListener("change", () => ctx.setParams({ temp: this.temp.value, topk: String(int(this.topk.value, 0)), topp: this.topp.value }));
    }

    const picks = el("div", { className: "wr-picks" });
    this.layer = el("select", { "aria-label": t("write.layerLabel"), dataset: { testid: "write-layer" } });
    this.head = el("select", { "aria-label": t("write.headLabel"), dataset: { testid: "write-head" } });
    picks.append(el("label", {}, `${t("write.layer")} `), this.layer, el("label", {}, ` ${t("write.head")} `), this.head);
    this.layer.addEventListener("change", () => ctx.setParams({ layer: this.layer.value }));
    this.head.addEventListener("change", () => ctx.setParams({ head: this.head.value }));

    this.cacheTitle = el("p", { className: "wr-cache-title" });
    this.cache = el("ol", { className: "wr-cache", dataset: { testid: "write-cache" }, "aria-label": t("write.cacheLabel") });
    this.sinkNote = el("p", { className: "wr-sink", dataset: { testid: "write-sink" } });
    p.append(this.ask, this.status, form, nav, this.cands, knobs, picks, this.size, this.cacheTitle, this.cache, this.sinkNote);
    this.prompt.value = ctx.params.prompt;
    this.askedStep = null;
    this.say("getting");
  }

  at() {
    return this.answer ? atOf(this.answer, this.ctx.params) : -1;
  }

  goTo(i) {
    const n = this.answer?.tokens.length ?? 0;
    if (!n || this.live) return;
    this.ctx.setParams({ at: String(Math.max(0, Math.min(n - 1, i))) });
  }

  /** Stream `n` new tokens after the prompt (again from the start: the same settings write the same tokens). */
  async write(n, fresh) {
    this.controller?.abort();
    const ctx = this.ctx;
    const used = fresh || !int(ctx.params.n, 0) ? `${num(this.temp.value, 0)},${int(this.topk.value, 0)},${num(this.topp.value, 1)}` : ctx.params.used;
    const params = { ...ctx.params, prompt: this.prompt.value, used };
    if (!params.prompt.trim()) {
      this.say("empty");
      return;
    }
    const controller = new AbortController();
    this.controller = controller;
    const live = emptyAnswer(this.answer.info);
    this.live = live;
    const request = requestOf(params, n);
    this.busy(true);
    const started = performance.now();
    this.say(this.answer.info.loaded ? "writing" : "loading");
    const tick = setInterval(() => {
      if (!live.prompt_tokens) this.say("loadingFor", { s: Math.round((performance.now() - started) / 1000) });
    }, 1000);
    let reason = "stopped";
    try {
      await streamWriting(request, controller.signal, (line) => {
        if (addLine(live, line)) {
          reason = line.reason;
          return;
        }
        // the class first: its pages draw each token as it comes (write/live.js), no model runs for them;
        // this page draws it itself, so nothing loads or draws again for it (draw: false)
        ctx.setParams({ live: encodeLive(live.tokens, params.prompt, live.prompt_tokens?.length ?? 0) }, { draw: false });
        this.drawSoon(live, n);
      });
    } catch (err) {
      if (err.name !== "AbortError") {
        this.say("failed", { error: err.message });
        reason = "error";
      }
    } finally {
      clearInterval(tick);
      if (this.controller === controller) this.controller = null;
    }
    if (this.live !== live) return; // a newer write took over
    cancelAnimationFrame(this.drawing);
    this.drawing = 0;
    this.live = null;
    this.busy(false);
    const written = live.tokens.length;
    if (!written) {
      if (ctx.params.live) await ctx.setParams({ live: "" });
      this.draw(this.answer, this.at());
      return;
    }
    this.say(reason === "eos" ? "eos" : reason === "stopped" ? "stopped" : "done", { n: written });
    const next = { ...params, n: String(written), at: String(written - 1) };
    keepAnswer(next, live);
    await ctx.setParams({ prompt: next.prompt, used, n: next.n, at: next.at, live: "" });
  }

  /** Draw the streamed answer at the next frame: the lines that came together (a busy page reads
   * several at once) cost one drawing, of the newest. */
  drawSoon(live, n) {
    if (this.drawing) return;
    this.drawing = requestAnimationFrame(() => {
      this.drawing = 0;
      if (this.live !== live) return; // the writing ended (or another began) meanwhile
      this.say("progress", { i: live.tokens.length, n });
      this.draw(live, live.tokens.length - 1);
    });
  }

  /** The status line: message write.status.<kind> with `values`, or none (null); `statusOf` remembers which. */
  say(kind, values) {
    this.statusOf = kind;
    this.status.textContent = kind ? t(`write.status.${kind}`, values) : "";
  }

  busy(on) {
    this.go.disabled = on;
    this.one.disabled = on;
    this.stop.disabled = !on;
    this.ctx.panel.dataset.writing = String(on);
  }

  update(answer, stepId) {
    this.answer = answer;
    const ctx = this.ctx;
    if (!this.live && this.statusOf === "getting") this.say(null);
    if (document.activeElement !== this.prompt && !this.live) this.prompt.value = ctx.params.prompt;
    this.temp.value = ctx.params.temp;
    this.topk.value = ctx.params.topk;
    this.topp.value = ctx.params.topp;
    this.pickers(answer.info);
    this.drawAsk(stepId);
    this.stepId = stepId;
    this.drawSize(answer.info);
    // the step about the cache's size brings its table up beside the words; the others keep it below the knobs
    if (stepId === "size") this.ask.after(this.size);
    else this.cacheTitle.before(this.size);
    if (this.live) return;
    const following = decodeLive(ctx.params.live); // another page (the class's presenter) is writing
    if (following) this.drawLive(following);
    else this.draw(answer, this.at());
  }

  /** Tokens another page is writing (write/live.js): the text so far and the cache's size, no model numbers. */
  drawLive(f) {
    const ctx = this.ctx;
    const n = f.tokens.length;
    this.text.replaceChildren(el("span", { className: "wr-prompt" }, f.prompt));
    f.tokens.forEach((tok, i) => this.text.append(el("span", { className: "wr-tok", dataset: { testid: `write-token-${i}`, id: String(tok.id) } }, visible(tok.token))));
    this.back.disabled = true;
    this.fwd.disabled = true;
    this.showToken(this.text.lastElementChild);
    Object.assign(ctx.panel.dataset, { written: String(n), at: String(n - 1), following: "true", kvLen: String(f.promptTokens + n) });
    this.shown = null;
    this.drawBars();
    this.say("following", { n });
    this.cacheTitle.textContent = t("write.cache.live", { rows: f.promptTokens + n });
    this.cache.replaceChildren();
    this.sinkNote.textContent = "";
    this.scene?.update({ rows: f.promptTokens + n, weights: null, sink: false });
  }

  /** The written text scrolls in its own box: keep `token` (the one shown, the newest) inside it, not
   * below its edge where the candidates' bars are. */
  showToken(token) {
    if (!token) return;
    const box = this.text.getBoundingClientRect();
    const r = token.getBoundingClientRect();
    if (r.bottom > box.bottom) this.text.scrollTop += r.bottom - box.bottom;
    else if (r.top < box.top) this.text.scrollTop -= box.top - r.top;
  }

  drawAsk(stepId) {
    if (this.askedStep === stepId) return; // a guess stays answered while the same step redraws
    this.askedStep = stepId;
    predictBox(this.ask, this.steps.find((s) => s.id === stepId)?.ask, {
      testid: "write-ask",
      answer: () => this.answer,
      ctx: this.ctx,
      answered: () => this.drawSize(this.answer.info),
    });
  }

  /** Whether the cache's sizes are still the size step's question: before that step, and on it until a guess. */
  sizeAsked() {
    const at = this.steps.findIndex((s) => s.id === this.stepId);
    const size = this.steps.findIndex((s) => s.id === "size");
    return at < size || (at === size && this.ask.dataset.answered !== "true");
  }

  pickers(info) {
    if (this.layer.options.length !== info.layers) {
      this.layer.replaceChildren(...Array.from({ length: info.layers }, (_, i) => el("option", { value: String(i) }, String(i))));
      this.head.replaceChildren(
        ...headGroups(info.heads, info.kv_heads).map((group, g) => {
          const og = el("optgroup", { label: t("write.headGroup", { g, first: group[0], last: group[group.length - 1] }) });
          for (const h of group) og.append(el("option", { value: String(h) }, t("write.headOption", { h, g })));
          return og;
        }),
      );
    }
    this.layer.value = String(int(this.ctx.params.layer, 5));
    this.head.value = String(int(this.ctx.params.head, 0));
  }

  drawSize(info) {
    const asked = this.sizeAsked(); // its numbers would answer the question: "?" until the guess
    const row = (tokens) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, t("write.size.tokens", { n: tokens })));
      for (const bytes of [4, 2]) {
        const b = cacheBytes({ layers: info.layers, kvHeads: info.kv_heads, d: info.d_k, bytes, tokens });
        tr.append(el("td", { dataset: { testid: `write-size-${tokens}-${bytes}`, bytes: String(b) } }, asked ? "? B" : t("write.size.bytes", { bytes: grouped(b), mb: sizeOf(b) })));
      }
      return tr;
    };
    const head = el("tr");
    head.append(el("th", {}, t("write.size.corner")), el("th", { scope: "col" }, t("write.size.four")), el("th", { scope: "col" }, t("write.size.two")));
    const caption = t("write.size.caption", { layers: info.layers, kv: info.kv_heads, d: info.d_k });
    this.size.replaceChildren(el("caption", {}, caption), head, row(1024), row(8192));
  }

  /** The written text, the candidates, the 3D cache and its rows, for written token `at` of `a`. */
  draw(a, at) {
    const ctx = this.ctx;
    if (ctx.panel.dataset.following === "true" && this.statusOf === "following") this.say(null);
    delete ctx.panel.dataset.following;
    this.text.replaceChildren();
    if (a.prompt_tokens) {
      // the prompt as the model read it: one mark per token
      const read = el("span", { className: "wr-prompt", dataset: { testid: "write-prompt-text", tokens: String(a.prompt_tokens.length) } });
      read.append(...a.prompt_tokens.map((tok) => el("span", { className: "wr-ptok" }, tok)));
      this.text.append(read);
    } else this.text.append(el("span", { className: "wr-prompt" }, this.prompt.value));
    a.tokens.forEach((tok, i) => {
      const b = el("button", { type: "button", className: "wr-tok", "aria-pressed": String(i === at), dataset: { testid: `write-token-${i}`, id: String(tok.id) } }, visible(tok.token));
      b.addEventListener("click", () => this.goTo(i));
      this.text.append(b);
    });
    this.back.disabled = at <= 0 || !!this.live;
    this.fwd.disabled = at < 0 || at >= a.tokens.length - 1 || !!this.live;
    this.showToken(this.text.querySelector('[aria-pressed="true"]'));
    ctx.panel.dataset.written = String(a.tokens.length);
    ctx.panel.dataset.at = String(at);
    const look = lookAt(a, at);
    const tok = look?.t ?? null;
    this.shown = tok;
    this.drawBars();
    const withheld = !!ctx.withheld;
    if (!tok) {
      const rows = a.prompt_tokens?.length ?? 0;
      this.cacheTitle.textContent = t("write.cache.empty");
      this.cache.replaceChildren();
      this.sinkNote.textContent = "";
      this.scene?.update({ rows, weights: null, sink: false });
      ctx.panel.dataset.kvLen = String(rows);
      return;
    }
    const tokens = look.cache;
    const weights = withheld ? null : tok.attention;
    ctx.panel.dataset.kvLen = String(tok.kv_len);
    const rows = { rows: tok.kv_len, head: tok.head, layer: tok.layer };
    this.cacheTitle.textContent = withheld
      ? t("write.cache.hidden", { rows: tok.kv_len })
      : look.next
        ? t("write.cache.next", rows)
        : t("write.cache.at", { ...rows, i: at + 1 });
    this.cache.replaceChildren(
      ...tokens.map((tok, j) => {
        const w = weights ? weights[j] : null;
        const li = el("li", { dataset: { testid: `write-row-${j}`, ...(w === null ? {} : { w: String(w) }) } });
        li.append(el("span", { className: "wr-row-tok" }, visible(tok)));
        if (w !== null) {
          li.append(el("span", { className: "wr-row-w" }, w.toFixed(3)));
          li.style.setProperty("--w", String(Math.min(1, w)));
        }
        return li;
      }),
    );
    const sink = !!weights && weights.indexOf(Math.max(...weights)) === 0 && tok.kv_len > 2;
    this.cache.firstElementChild?.classList.toggle("wr-row-sink", sink);
    this.sinkNote.textContent = sink
      ? t("write.sink", { token: quote(visible(tokens[0])), p: pct(weights[0]) })
      : "";
    this.scene?.update({ rows: tok.kv_len, weights, sink });
  }

  /** The ten candidates: the model's probability (grey) and the chance of being drawn under the knobs (orange). */
  drawBars() {
    const tok = this.shown;
    const s = { temperature: num(this.temp.value, 0), topK: int(this.topk.value, 0), topP: num(this.topp.value, 1) };
    const temperature = s.temperature === 0 ? t("write.knobs.greedy") : `T ${decimal(s.temperature, 1)}`;
    this.knobText.textContent = ` ${temperature}, k ${s.topK || t("write.knobs.all")}, p ${decimal(s.topP, 2)}`;
    if (!tok || this.ctx.withheld) {
      this.cands.replaceChildren();
      return;
    }
    const chance = chances(tok.candidates, s);
    this.cands.replaceChildren(
      ...tok.candidates.map((c, i) => {
        const li = el("li", { className: c.id === tok.id ? "wr-cand wr-chosen" : "wr-cand", dataset: { testid: `write-cand-${i}`, id: String(c.id), p: String(c.p), chance: String(chance[i]) } });
        const bars = el("span", { className: "wr-bars" });
        const pBar = el("span", { className: "wr-bar-p" });
        pBar.style.width = width(c.p);
        const cBar = el("span", { className: "wr-bar-c" });
        cBar.style.width = width(chance[i]);
        bars.append(pBar, cBar);
        li.append(el("span", { className: "wr-cand-tok" }, visible(c.token)), bars, el("span", { className: "wr-cand-p" }, `${pct(c.p)} → ${pct(chance[i])}`));
        return li;
      }),
    );
  }

  dispose() {
    this.controller?.abort();
    cancelAnimationFrame(this.drawing);
    this.live = null;
    this.scene?.dispose();
    this.ctx.panel.classList.remove("wr-panel");
    for (const k of ["writing", "written", "at", "kvLen", "following"]) delete this.ctx.panel.dataset[k];
  }
}
