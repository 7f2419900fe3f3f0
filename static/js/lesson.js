// The lesson: the chapters (registered in chapters/index.js), their steps, the contents list,
// and the panels every step has (the explanation, the numbers list, the NumPy panel with its
// Copy button). Every chapter is a module of the same kind (chapters/CONTRACT.md): it mounts
// its view, draws a step of its answer, and says which of the page's controls it uses.
// Two kinds of answer: a chapter's own, fetched by its load(ctx), or the page's (`live(ctx)`,
// the attention view of `steps` and `masks`), redrawn after every change of the page's state.
//
// Keys (keys.js): ← → move between the steps of a chapter; PageDown / PageUp walk the whole
// lesson (past a chapter's last step to the next chapter's first; clickers send these).
// URL: ?chapter=ID&step=STEP (+ the chapter's own parameters): see state.js.

import { apiGet, apiPost } from "./api.js";
import { CHAPTER_IDS, CHAPTERS } from "./chapters/index.js";
import { el } from "./dom.js";

/** The page's controls a chapter may use (module.controls); the others are not shown in it. */
export const CONTROLS = ["example", "sentence", "try", "mask", "predict"];

const $ = (id) => document.getElementById(id);
const LATER_CODE_TOKENS = 64; // an answer of more tokens has its NumPy code written after the view is drawn
const whenIdle = (fn) => (window.requestIdleCallback ? window.requestIdleCallback(fn, { timeout: 300 }) : setTimeout(fn, 16));

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

export class Lesson {
  /**
   * @param store  the page's store: the lesson reads state.chapter, chapterStep, chapterParams,
   *               step and changes them through its actions (enterChapter, setChapterStep, …)
   * @param hooks {
   *   attention                 the AttentionView (ctx.attention for the chapters that show it)
   *   makeStage(container)      a Stage for the chapters' 3D view (or null without WebGL)
   *   drawn(flag)               the page is (not) drawn and settled
   * }
   */
  constructor(store, hooks) {
    this.store = store;
    this.state = store.state;
    this.act = store.act;
    this.hooks = hooks;
    this.modules = new Map(); // id → Promise<module | null> (null: coming)
    this.listed = listedModules();
    this.module = null; // the current chapter's module (null: coming or loading)
    this.shown = null; // the id of the chapter mounted now
    this.view = null; // what module.mount() returned
    this.ctx = null;
    this.answer = null; // the answer of load(), for chapters that load their own
    this.error = null;
    this.seq = 0;
    this.abort = null;
    this.stage = null;
    this.code = "";
    this.codeJob = 0; // counts the codes asked for: a code written in idle time for an older view is dropped
    this.pendingCode = null; // writes the code of the view on screen, until it is written
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

  /** A chapter's module, or null while it is coming (not written yet, or failed to load). */
  load(id) {
    const entry = CHAPTERS.find((c) => c.id === id);
    if (!entry) return Promise.resolve(null);
    if (!this.modules.has(id)) {
      const promise =
        this.listed && !this.listed.has(`/static/js/chapters/${id}.js`)
          ? Promise.resolve(null) // not on the server: no request, no 404 in the console
          : Promise.resolve()
              .then(() => entry.load())
              .then((m) => (m.default && Array.isArray(m.default.steps) ? m.default : null))
              .catch((err) => {
                console.warn(`chapter ${id} is not available:`, err);
                return null;
              });
      this.modules.set(id, promise);
    }
    return this.modules.get(id);
  }

  // ---- where we are ----------------------------------------------------------------------

  get chapterId() {
    return this.state.chapter;
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
        this.go(c.id, null, null, { history: true });
        $("chapters-toggle").focus();
      });
      return el("li", {}, null).appendChild(a).parentNode;
    });
    $("contents-list").replaceChildren(...items);
    // fill in the modules' own titles and summaries, and mark the ones still coming
    for (const c of CHAPTERS) {
      this.load(c.id).then((m) => {
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
   * (a chapter's own URL parameters; null keeps none). `history`: a view a user would go back
   * to (a history entry). `keepMask`: the URL named the mask. Resolves once the chapter is drawn.
   */
  async go(id, stepId = null, params = null, { history = false, last = false, keepMask = false } = {}) {
    if (!CHAPTER_IDS.includes(id)) id = "steps";
    const same = id === this.shown && Boolean(this.ctx);
    if (!same) this.leave();
    const seq = ++this.seq;
    this.hooks.drawn(false);
    const module = await this.load(id);
    if (seq !== this.seq) return;
    const steps = module?.steps ?? [];
    const wanted = steps.find((s) => s.id === stepId) ?? (last ? steps[steps.length - 1] : steps[0]) ?? null;
    if (same) {
      // the same chapter: a new step, and new parameters if they differ
      const next = { ...this.ctx.params };
      for (const key of Object.keys(next)) if (params && key in params) next[key] = String(params[key]);
      const changed = Object.keys(next).some((k) => next[k] !== this.ctx.params[k]);
      this.enterStep(wanted, { history, keepMask });
      if (changed) return this.setParams(next, { history });
      return this.draw();
    }
    this.module = module;
    this.shown = id;
    this.act.enterChapter(id, wanted?.id ?? null, params, { history });
    this.markContents();
    this.showControls(module?.controls ?? []);
    this.buildStepper();
    if (!module) return this.showComing();
    if (wanted?.view) this.act.showAttention(wanted.view, { keepMask });
    if (!module.live) this.showChapterView();
    this.ctx = this.makeCtx(module);
    $("chapter-coming").hidden = true;
    this.safely("mount", () => {
      this.view = module.mount ? module.mount(this.ctx) : null;
    });
    if (module.live) return this.draw();
    await this.reload();
  }

  /** Go to `step` of the chapter on screen: the state's step, and the attention view's if it has one. */
  enterStep(step, { history = false, keepMask = false } = {}) {
    if (!step) return;
    if (this.chapterId !== "steps") this.act.setChapterStep(step.id, { history });
    if (step.view) this.act.showAttention(step.view, { keepMask, history });
  }

  setStep(id, { history = false } = {}) {
    const step = this.steps().find((s) => s.id === id);
    if (!step || step.id === this.stepId()) return;
    this.enterStep(step, { history });
    this.draw();
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
    return this.go(CHAPTER_IDS[k], null, null, { history: true, last: delta < 0 });
  }

  /** Show only the controls the chapter uses (the others do nothing there). */
  showControls(controls) {
    for (const node of document.querySelectorAll("[data-control]")) node.hidden = !controls.includes(node.dataset.control);
    $("app").dataset.controls = controls.join(" ");
  }

  // ---- the stepper --------------------------------------------------------------------------

  buildStepper() {
    const buttons = this.steps().map((step, i) => {
      const btn = el("button", { type: "button", dataset: { step: step.id, testid: `step-${step.id}` } });
      btn.append(el("span", { className: "num" }, String(i + 1)), el("span", { className: "step-name" }, step.short ?? step.id));
      btn.title = step.title;
      btn.addEventListener("click", () => this.setStep(step.id));
      const li = el("li");
      li.append(btn);
      return li;
    });
    $("step-list").replaceChildren(...buttons);
    const k = CHAPTER_IDS.indexOf(this.chapterId);
    $("chapter-name").textContent = `Chapter ${k + 1} of ${CHAPTERS.length}: ${this.title()}`;
    const next = CHAPTERS[k + 1];
    $("next-chapter").querySelector(".next-title").textContent = next ? `: ${next.title}` : "";
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
    // at a chapter's last step, the way on is the next chapter (it takes the place of Next, so nothing moves)
    const onward = last && CHAPTER_IDS.indexOf(this.chapterId) < CHAPTER_IDS.length - 1;
    $("next-chapter").hidden = !onward;
    $("next-step").hidden = onward;
  }

  // ---- drawing a chapter ----------------------------------------------------------------------

  makeCtx(module) {
    const defaults = module.params ?? {};
    const params = {};
    for (const [key, value] of Object.entries(defaults)) params[key] = String(this.state.chapterParams[key] ?? value);
    if (Object.keys(params).length) this.act.setChapterParams(params);
    const signal = () => this.abort?.signal;
    const state = this.state;
    return {
      params,
      setParams: (patch) => this.setParams(patch),
      post: (path, body) => apiPost(path, body, signal()),
      get: (path) => apiGet(path, signal()),
      panel: $("chapter-panel"),
      get stage() {
        return module.live ? null : this.lesson.getStage();
      },
      lesson: this,
      attention: this.hooks.attention,
      get focus() {
        return state.focus;
      },
      get mask() {
        return state.mask;
      },
      get withheld() {
        return state.withheld;
      },
      page: Object.freeze({ example: state.example, sentence: state.sentence, focus: state.focus, mask: state.mask }),
    };
  }

  getStage() {
    if (!this.stage) this.stage = this.hooks.makeStage($("chapter-stage"));
    return this.stage;
  }

  async setParams(patch, { history = false } = {}) {
    if (!this.ctx) return;
    for (const [key, value] of Object.entries(patch)) this.ctx.params[key] = String(value);
    this.act.setChapterParams(this.ctx.params, { history });
    await this.reload();
  }

  async reload() {
    const module = this.module;
    if (!module || module.live) return this.draw();
    const seq = ++this.seq;
    this.abort?.abort();
    this.abort = new AbortController();
    this.hooks.drawn(false);
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

  /** After every change of the page's state: a chapter that shows the page's answer draws it again. */
  refresh() {
    if (this.module?.live && this.ctx && this.shown === this.chapterId) this.draw();
  }

  draw() {
    const module = this.module;
    if (!module || !this.ctx) return;
    this.markStepper();
    const step = this.currentStep();
    let answer = this.answer;
    let ready = Boolean(this.answer) || Boolean(this.error);
    if (module.live) {
      this.safely("update", () => this.view?.update?.(null, step?.id, step));
      const live = module.live(this.ctx);
      answer = live.answer;
      ready = live.ready;
    }
    // where the step's title and words go: the view's own explanation box, or the chapter view's
    const title = this.view?.explain?.title ?? $("chapter-title");
    const text = this.view?.explain?.text ?? $("chapter-text");
    const banner = $("chapter-error");
    banner.hidden = !this.error;
    banner.textContent = this.error ? `${this.error.message} (The chapter still shows its last answer.)` : "";
    if (step) title.textContent = `${this.stepIndex() + 1}. ${step.title}`;
    else title.textContent = module.title;
    // what the step's words refer to (a CSS selector; tests check it is on the first screen)
    $("app").dataset.figure = step?.figure ?? module.figure ?? "";
    if (answer && step) {
      if (!module.live) this.safely("update", () => this.view?.update?.(answer, step.id));
      this.safely("text", () => {
        text.textContent = typeof step.text === "function" ? step.text(answer, this.ctx) : (step.text ?? "");
      });
      this.showNumbers(answer, step.id, this.ctx);
    }
    this.stage?.requestRender();
    this.hooks.drawn(ready);
  }

  /** The chapters' own view (its 3D stage, explanation and panel) in place of the attention view. */
  showChapterView() {
    $("app").dataset.layout = "chapter";
    $("chapter-view").hidden = false;
  }

  showComing() {
    this.showChapterView();
    $("chapter-title").textContent = this.title();
    $("chapter-text").textContent = "";
    $("chapter-coming").hidden = false;
    $("chapter-error").hidden = true;
    this.showNumbers(null);
    this.hooks.drawn(true);
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
    this.shown = null;
    $("chapter-panel").replaceChildren();
    $("chapter-text").textContent = "";
    this.stage?.clear();
  }

  /** Fit the 3D view on screen to its content (the projector view, a resize). */
  reframe() {
    if (this.module?.live) this.hooks.attention.reframe();
    else this.stage?.reframe();
  }

  // ---- the numbers list and the NumPy panel -------------------------------------------------

  showNumbers(answer, stepId, ctx) {
    const module = this.module;
    let numbers = [];
    if (answer && module) {
      this.safely("numbers", () => {
        numbers = module.numbers ? module.numbers(answer, stepId, ctx) : [];
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
    const writeCode = () => {
      let code = "";
      if (answer && module?.code) this.safely("code", () => (code = module.code(answer, stepId, ctx)));
      if (code !== this.code) $("numpy-status").textContent = "";
      this.code = code;
      $("numpy-code").textContent = code;
      $("numpy").hidden = !code && !numbers.length;
      $("numpy-copy").hidden = !code;
    };
    // a long sentence's code writes out every number of its q, k and v (~1 MB of text for 300
    // tokens: its writing and its layout took a third of Enter → drawn): it is written in the idle
    // time after the view has been drawn, below the fold; the code shown until then is replaced
    const job = ++this.codeJob;
    this.pendingCode = null;
    if (answer && module?.code && (answer.tokens?.length ?? 0) > LATER_CODE_TOKENS) {
      this.pendingCode = () => {
        if (job !== this.codeJob) return;
        this.pendingCode = null;
        writeCode();
      };
      $("numpy").hidden = false;
      whenIdle(() => this.pendingCode?.());
    } else {
      writeCode();
    }
  }

  async copyCode() {
    this.pendingCode?.(); // the code of the view on screen, not the one before it
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
