// The lesson: chapters, their steps, the contents list, and the panels every step has (the
// explanation, the numbers list, the NumPy panel with its Copy button).
//
// Chapters are modules in static/js/chapters/ (see chapters/CONTRACT.md). Two of them, `steps`
// and `masks`, are drawn by the attention view that main.js owns (`attention: true`: each step
// names the view's step and mask); every other chapter draws itself into #chapter-view through
// ctx (a panel element and a Stage). A chapter whose module is not there yet shows "coming".
//
// Keys (keys.js): ← → move between the steps of a chapter; PageDown / PageUp walk the whole
// lesson (past a chapter's last step to the next chapter's first; clickers send these).
// URL: ?chapter=ID&step=STEP (+ the chapter's own parameters): see state.js.

import { apiGet, apiPost } from "./api.js";
import { el } from "./dom.js";

/** The lesson's order. Titles here are used until a chapter's module is loaded (or while it is coming). */
export const CHAPTERS = [
  { id: "rnn", title: "Why not an RNN" },
  { id: "projections", title: "Where q, k and v come from" },
  { id: "steps", title: "The five steps of attention" },
  { id: "scaling", title: "Why divide by √d_k" },
  { id: "masks", title: "Full vs causal" },
  { id: "heads", title: "Many heads, then W_O" },
  { id: "positions", title: "Word order" },
  { id: "block", title: "The transformer block" },
  { id: "mistakes", title: "Common mistakes" },
  { id: "writing", title: "Writing one token at a time" },
  { id: "today", title: "Attention in today's models" },
];
export const CHAPTER_IDS = CHAPTERS.map((c) => c.id);

const modules = new Map(); // id → Promise<module | null> (null: coming)

/** The page's import map lists every module the server has (unbundled page); null when bundled. */
function listedModules() {
  const script = document.querySelector('script[type="importmap"]');
  if (!script) return null;
  try {
    return new Set(Object.keys(JSON.parse(script.textContent).imports ?? {}));
  } catch {
    return null;
  }
}
const LISTED = listedModules();

/** A chapter's module, or null while it is coming (not written yet, or failed to load). */
export function loadChapter(id) {
  if (!CHAPTER_IDS.includes(id)) return Promise.resolve(null);
  if (!modules.has(id)) {
    const path = `/static/js/chapters/${id}.js`;
    const promise =
      LISTED && !LISTED.has(path)
        ? Promise.resolve(null) // not on the server: no request, no 404 in the console
        : Promise.resolve()
            .then(() => import(`./chapters/${id}.js`)) // a bundle throws at once for a chapter it lacks
            .then((m) => (m.default && Array.isArray(m.default.steps) ? m.default : null))
            .catch((err) => {
              console.warn(`chapter ${id} is not available:`, err);
              return null;
            });
    modules.set(id, promise);
  }
  return modules.get(id);
}

const $ = (id) => document.getElementById(id);

export class Lesson {
  /**
   * @param state the page's state (chapter, chapterStep, chapterParams, step, mask, focus)
   * @param hooks {
   *   attention(view, { push, keepMask, compare })  show the attention view (steps/masks) at
   *                              view = { step, mask? } (keepMask: the URL named the mask)
   *   leaveAttention()           the attention view is hidden (another chapter is on)
   *   changed({ push })          another chapter's view changed: write the URL, tell the hub
   *   ready(flag)                the page is (not) drawn and settled
   *   makeStage(container)       a Stage for the chapters' 3D view (or null without WebGL)
   * }
   */
  constructor(state, hooks) {
    this.state = state;
    this.hooks = hooks;
    this.module = null; // the current chapter's module (null: coming or loading)
    this.view = null; // what module.mount() returned
    this.answer = null;
    this.error = null;
    this.seq = 0;
    this.abort = null;
    this.stage = null;
    this.shownChapter = null; // the chapter whose step buttons are built
    this.code = "";
    this.buildContents();
    $("chapters-toggle").addEventListener("click", () => this.toggleContents());
    $("contents").addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.toggleContents(false);
    });
    $("prev-step").addEventListener("click", () => this.move(-1));
    $("next-step").addEventListener("click", () => this.move(1));
    $("next-chapter").addEventListener("click", () => this.nextChapter(1));
    $("numpy-copy").addEventListener("click", () => this.copyCode());
  }

  // ---- where we are ----------------------------------------------------------------------

  get chapterId() {
    return this.state.chapter;
  }

  get isAttention() {
    return this.module?.attention === true;
  }

  steps() {
    return this.module?.steps ?? [];
  }

  stepId() {
    return this.state.chapter === "steps" ? this.state.step : this.state.chapterStep;
  }

  stepIndex() {
    return Math.max(0, this.steps().findIndex((s) => s.id === this.stepId()));
  }

  currentStep() {
    return this.steps()[this.stepIndex()] ?? null;
  }

  title() {
    return this.module?.title ?? CHAPTERS.find((c) => c.id === this.chapterId)?.title ?? this.chapterId;
  }

  // ---- the contents list -------------------------------------------------------------------

  buildContents() {
    const items = CHAPTERS.map((c, i) => {
      const a = el("a", { href: `?chapter=${c.id}`, dataset: { testid: `chapter-link-${c.id}`, chapter: c.id } });
      a.append(el("span", { className: "num" }, String(i + 1)), el("span", { className: "chapter-title" }, c.title));
      a.append(el("span", { className: "chapter-summary" }, ""));
      a.addEventListener("click", (e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return; // a new tab keeps working
        e.preventDefault();
        this.toggleContents(false);
        this.go(c.id, null, null, { push: true });
        $("chapters-toggle").focus();
      });
      return el("li", {}, null).appendChild(a).parentNode;
    });
    $("contents-list").replaceChildren(...items);
    // fill in the modules' own titles and summaries, and mark the ones still coming
    for (const c of CHAPTERS) {
      loadChapter(c.id).then((m) => {
        const a = $("contents-list").querySelector(`[data-chapter="${c.id}"]`);
        a.querySelector(".chapter-title").textContent = m?.title ?? c.title;
        a.querySelector(".chapter-summary").textContent = m ? (m.summary ?? "") : "coming";
        a.classList.toggle("coming", !m);
      });
    }
  }

  toggleContents(open = null) {
    const nav = $("contents");
    const show = open ?? nav.hidden;
    if (!show && nav.contains(document.activeElement)) $("chapters-toggle").focus(); // the focus stays in sight
    nav.hidden = !show;
    $("chapters-toggle").setAttribute("aria-expanded", String(show));
    if (show) (nav.querySelector('[aria-current="page"]') ?? nav.querySelector("a"))?.focus();
  }

  markContents() {
    for (const a of $("contents-list").querySelectorAll("a")) {
      if (a.dataset.chapter === this.chapterId) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  // ---- moving around -----------------------------------------------------------------------

  /**
   * Open chapter `id` at step `stepId` (its first, or its last with `last`), with `params`
   * (a chapter's own URL parameters; null keeps none). Resolves once the chapter is drawn.
   */
  async go(id, stepId = null, params = null, { push = false, last = false, keepMask = false } = {}) {
    if (!CHAPTER_IDS.includes(id)) id = "steps";
    const same = id === this.chapterId && this.shownChapter === id;
    if (!same) this.leave();
    this.state.chapter = id;
    const seq = ++this.seq;
    this.hooks.ready(false);
    const module = await loadChapter(id);
    if (seq !== this.seq) return;
    this.module = module;
    const steps = this.steps();
    const wanted = steps.find((s) => s.id === stepId) ?? (last ? steps[steps.length - 1] : steps[0]) ?? null;
    this.state.chapterStep = id === "steps" ? null : (wanted?.id ?? null);
    this.markContents();
    if (!module) {
      this.state.chapterParams = {};
      return this.showComing({ push });
    }
    if (module.attention) {
      this.state.chapterParams = {};
      this.buildStepper();
      return this.hooks.attention(wanted?.view ?? {}, { push, keepMask, compare: Boolean(wanted?.compare) });
    }
    this.hooks.leaveAttention();
    if (same && this.ctx) {
      // the same chapter: a new step, and new parameters if they differ
      const next = { ...this.ctx.params };
      for (const key of Object.keys(next)) if (params && key in params) next[key] = String(params[key]);
      const changed = Object.keys(next).some((k) => next[k] !== this.ctx.params[k]);
      this.markStepper();
      if (changed) return this.setParams(next, { push });
      this.draw();
      this.hooks.changed({ push });
      return;
    }
    this.state.chapterParams = params ? { ...params } : {};
    this.buildStepper();
    return this.enterModule(module, { push });
  }

  setStep(id, { push = false } = {}) {
    const step = this.steps().find((s) => s.id === id);
    if (!step || step.id === this.stepId()) return;
    if (this.isAttention) {
      if (this.chapterId !== "steps") this.state.chapterStep = step.id;
      this.hooks.attention(step.view ?? {}, { push, compare: Boolean(step.compare) });
      return;
    }
    this.state.chapterStep = step.id;
    this.draw();
    this.hooks.changed({ push });
  }

  /** ← →: the previous or next step of this chapter (stays at either end). */
  move(delta) {
    const steps = this.steps();
    const i = this.stepIndex() + delta;
    if (i >= 0 && i < steps.length) this.setStep(steps[i].id);
  }

  /** PageDown / PageUp: the next step, or past the chapter's end the next chapter. */
  walk(delta) {
    const steps = this.steps();
    const i = this.stepIndex() + delta;
    if (steps.length && i >= 0 && i < steps.length) return this.setStep(steps[i].id);
    return this.nextChapter(delta);
  }

  nextChapter(delta) {
    const k = CHAPTER_IDS.indexOf(this.chapterId) + delta;
    if (k < 0 || k >= CHAPTER_IDS.length) return;
    return this.go(CHAPTER_IDS[k], null, null, { push: true, last: delta < 0 });
  }

  // ---- the stepper --------------------------------------------------------------------------

  buildStepper() {
    this.shownChapter = this.chapterId;
    const buttons = this.steps().map((step, i) => {
      const btn = el("button", { type: "button", dataset: { step: step.id, testid: `step-${step.id}` } });
      btn.append(el("span", { className: "num" }, String(i + 1)), document.createTextNode(` ${step.short ?? step.id}`));
      btn.addEventListener("click", () => this.setStep(step.id));
      const li = el("li");
      li.append(btn);
      return li;
    });
    $("step-list").replaceChildren(...buttons);
    const k = CHAPTER_IDS.indexOf(this.chapterId);
    $("chapter-name").textContent = `Chapter ${k + 1} of ${CHAPTERS.length}: ${this.title()}`;
    const next = CHAPTERS[k + 1];
    if (next) $("next-chapter").lastChild.textContent = ` ${next.title}`;
    this.markStepper();
  }

  markStepper() {
    const id = this.stepId();
    const steps = this.steps();
    for (const btn of $("step-list").querySelectorAll("button")) {
      const on = btn.dataset.step === id;
      btn.classList.toggle("current", on);
      if (on) btn.setAttribute("aria-current", "step");
      else btn.removeAttribute("aria-current");
    }
    const i = this.stepIndex();
    const last = i >= steps.length - 1;
    $("prev-step").disabled = i <= 0;
    $("next-step").disabled = last;
    // at a chapter's last step, the way on is the next chapter
    $("next-chapter").hidden = !last || CHAPTER_IDS.indexOf(this.chapterId) >= CHAPTER_IDS.length - 1;
  }

  // ---- the attention chapters (drawn by main.js) ----------------------------------------

  /** main.js, after drawing the attention view: the words, numbers and code of this step. */
  renderAttention(answer, ctx) {
    if (!this.isAttention) return;
    if (this.shownChapter !== this.chapterId) this.buildStepper();
    this.markStepper();
    const step = this.currentStep();
    if (!step || !answer) return;
    const k = this.stepIndex();
    $("step-title").textContent = `${k + 1}. ${step.title}`;
    this.safely("text", () => ($("step-text").textContent = step.text(answer, ctx)));
    this.showNumbers(answer, step.id, ctx);
  }

  // ---- other chapters ---------------------------------------------------------------------

  makeCtx(module) {
    const defaults = module.params ?? {};
    const params = {};
    for (const [key, value] of Object.entries(defaults)) params[key] = String(this.state.chapterParams[key] ?? value);
    this.state.chapterParams = params;
    const signal = () => this.abort?.signal;
    const state = this.state;
    return {
      params,
      setParams: (patch) => this.setParams(patch),
      post: (path, body) => apiPost(path, body, signal()),
      get: (path) => apiGet(path, signal()),
      panel: $("chapter-panel"),
      stage: this.getStage(),
      get focus() {
        return state.focus;
      },
      get mask() {
        return state.mask;
      },
      page: Object.freeze({ example: state.example, sentence: state.sentence, focus: state.focus, mask: state.mask }),
    };
  }

  getStage() {
    if (!this.stage) this.stage = this.hooks.makeStage($("chapter-stage"));
    return this.stage;
  }

  async enterModule(module, { push }) {
    this.ctx = this.makeCtx(module);
    $("chapter-coming").hidden = true;
    this.safely("mount", () => {
      this.view = module.mount ? module.mount(this.ctx) : null;
    });
    this.hooks.changed({ push });
    await this.reload();
  }

  async setParams(patch, { push = false } = {}) {
    if (!this.ctx) return;
    for (const [key, value] of Object.entries(patch)) this.ctx.params[key] = String(value);
    this.state.chapterParams = { ...this.ctx.params };
    this.hooks.changed({ push });
    await this.reload();
  }

  async reload() {
    const module = this.module;
    const seq = ++this.seq;
    this.abort?.abort();
    this.abort = new AbortController();
    this.hooks.ready(false);
    let answer = null;
    let error = null;
    try {
      answer = module.load ? await module.load(this.ctx) : {};
    } catch (err) {
      if (err?.name === "AbortError") return;
      error = err;
    }
    if (seq !== this.seq || module !== this.module) return;
    this.error = error;
    if (!error) this.answer = answer;
    this.draw();
  }

  draw() {
    const module = this.module;
    if (!module || module.attention) return;
    this.markStepper();
    const step = this.currentStep();
    const banner = $("chapter-error");
    banner.hidden = !this.error;
    banner.textContent = this.error ? `${this.error.message} (The chapter still shows its last answer.)` : "";
    $("chapter-title").textContent = step ? `${this.stepIndex() + 1}. ${step.title}` : module.title;
    if (this.answer && step) {
      this.safely("update", () => this.view?.update?.(this.answer, step.id));
      this.safely("text", () => {
        $("chapter-text").textContent = typeof step.text === "function" ? step.text(this.answer, this.ctx) : (step.text ?? "");
      });
      this.showNumbers(this.answer, step.id, this.ctx);
    }
    this.stage?.requestRender();
    this.hooks.ready(Boolean(this.answer) || Boolean(this.error));
  }

  showComing({ push }) {
    this.hooks.leaveAttention();
    this.buildStepper();
    $("chapter-title").textContent = this.title();
    $("chapter-text").textContent = "";
    $("chapter-coming").hidden = false;
    $("chapter-error").hidden = true;
    this.showNumbers(null);
    this.hooks.changed({ push });
    this.hooks.ready(true);
  }

  /** Undo what the chapter on screen added (its view, its panel, its stage's objects). */
  leave() {
    this.abort?.abort();
    this.abort = null;
    if (this.view) this.safely("dispose", () => this.view.dispose?.());
    this.view = null;
    this.ctx = null;
    this.answer = null;
    this.error = null;
    $("chapter-panel").replaceChildren();
    $("chapter-text").textContent = "";
    this.stage?.clear();
  }

  // ---- the numbers list and the NumPy panel -------------------------------------------------

  showNumbers(answer, stepId, ctx) {
    const module = this.module;
    let numbers = [];
    let code = "";
    if (answer && module) {
      this.safely("numbers", () => {
        numbers = module.numbers ? module.numbers(answer, stepId, ctx) : [];
      });
      this.safely("code", () => {
        code = module.code ? module.code(answer, stepId, ctx) : "";
      });
    }
    $("lesson-numbers").replaceChildren(
      ...numbers.map((n) => {
        const li = el("li", n.testid ? { dataset: { testid: `${n.testid}-item` } } : {});
        li.append(
          el("span", { className: "number-label" }, n.label),
          el("span", { className: "number-value", dataset: n.testid ? { testid: n.testid } : {} }, n.value),
        );
        return li;
      }),
    );
    $("lesson-numbers").hidden = !numbers.length;
    this.code = code;
    $("numpy-code").textContent = code;
    $("numpy").hidden = !code && !numbers.length;
    $("numpy-copy").hidden = !code;
    $("numpy-status").textContent = "";
  }

  async copyCode() {
    const status = $("numpy-status");
    try {
      await navigator.clipboard.writeText(this.code);
      status.textContent = "Copied: paste it into Python (NumPy is all it needs).";
    } catch {
      // no clipboard (an insecure origin, a denied permission): select the code for Ctrl+C
      const range = document.createRange();
      range.selectNodeContents($("numpy-code"));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  }

  /** A chapter's function that throws must not take the page down: say so in the console. */
  safely(what, fn) {
    try {
      fn();
    } catch (err) {
      console.error(`chapter ${this.chapterId}: ${what} failed:`, err);
    }
  }
}
