// The lesson's runner: the chapters (registered in chapters/index.js) and their steps, where
// the page is in them, and a chapter's life (mount, load, draw, leave). Every chapter is a
// module of the same kind (chapters/CONTRACT.md): it mounts its view, draws a step of its
// answer, and says which of the page's controls it uses. Two kinds of answer: a chapter's own,
// fetched by its load(ctx), or the page's (`live(ctx)`, the attention view of `steps` and
// `masks`), redrawn after every change of the page's state.
//
// The panels each have a module of their own in lesson/: the contents list (contents.js), the
// stepper (stepper.js), the step's title and words (explain.js), the numbers and the NumPy
// program (numbers.js); the chapters' modules are loaded by modules.js.
//
// Keys (keys.js): ← → move between the steps of a chapter; PageDown / PageUp walk the whole
// lesson (past a chapter's last step to the next chapter's first; clickers send these).
// URL: ?chapter=ID&step=STEP (+ the chapter's own parameters): see state.js.

import { apiGet, apiPost } from "./api.js";
import { integer } from "./i18n.js";
import { CHAPTER_IDS, CHAPTERS } from "./chapters/index.js";
import { Contents } from "./lesson/contents.js";
import { Explanation } from "./lesson/explain.js";
import { ChapterModules } from "./lesson/modules.js";
import { NumbersPanel } from "./lesson/numbers.js";
import { Stepper } from "./lesson/stepper.js";
import { alone } from "./state.js";

/** The page's controls a chapter may use (module.controls); the others are not shown in it. */
export const CONTROLS = ["example", "sentence", "try", "mask", "predict"];

const $ = (id) => document.getElementById(id);
const LATER_CODE_TOKENS = 64; // an answer of more tokens has its NumPy code written after the view is drawn

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
    this.modules = new ChapterModules();
    this.module = null; // the current chapter's module (null: coming or loading)
    this.shown = null; // the id of the chapter mounted now
    this.view = null; // what module.mount() returned
    this.ctx = null;
    this.answer = null; // the answer of load(), for chapters that load their own
    this.drawnWithheld = null; // why the weights were held back when the chapter last drew (refresh())
    this.drawnAlone = true; // ctx.alone when the chapter last drew (refresh())
    this.error = null;
    this.seq = 0;
    this.abort = null;
    this.stage = null;
    this.contents = new Contents({ load: (id) => this.load(id), open: (id) => this.go(id, null, null, { history: true }) });
    this.stepper = new Stepper({ choose: (id) => this.setStep(id), move: (d) => this.move(d), nextChapter: (d) => this.nextChapter(d) });
    this.explanation = new Explanation();
    this.numbersPanel = new NumbersPanel();
  }

  /** A chapter's module, or null while it is coming (not written yet, or failed to load). */
  load(id) {
    return this.modules.load(id);
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

  /** Open (true), close (false) or flip (null) the contents list. */
  toggleContents(open = null) {
    this.contents.toggle(open);
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
    this.contents.mark(id);
    this.showControls(module?.controls ?? []);
    this.buildStepper();
    if (!module) return this.showComing();
    if (wanted?.view) this.act.showAttention(wanted.view, { keepMask });
    if (!module.live) this.explanation.showChapterView();
    this.ctx = this.makeCtx(module);
    this.explanation.coming(false);
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

  buildStepper() {
    this.stepper.build(this.steps(), this.chapterId, this.title());
    this.markStepper();
  }

  markStepper() {
    this.stepper.mark(this.stepId(), this.stepIndex(), this.steps().length, this.chapterId);
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
      setParams: (patch, options) => this.setParams(patch, options),
      redraw: () => this.draw(),
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
      get alone() {
        return alone(state);
      },
      page: Object.freeze({ example: state.example, sentence: state.sentence, focus: state.focus, mask: state.mask }),
    };
  }

  getStage() {
    if (!this.stage) this.stage = this.hooks.makeStage($("chapter-stage"));
    return this.stage;
  }

  /** `draw: false`: the chapter has drawn what the patch says itself (a token streamed in): the URL
   * and the room take the parameters, and nothing loads or draws again. */
  async setParams(patch, { history = false, draw = true } = {}) {
    if (!this.ctx) return;
    for (const [key, value] of Object.entries(patch)) this.ctx.params[key] = String(value);
    this.act.setChapterParams(this.ctx.params, { history });
    if (draw) await this.reload();
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
    if (!this.ctx || this.shown !== this.chapterId) return;
    // a chapter of its own answer draws again when the weights are held back or come back (a class
    // question, the teacher's H): it leaves out, or shows again, what ctx.withheld covers; and when the
    // page joins a class or leaves it (ctx.alone)
    const changed = (this.state.withheld?.reason ?? null) !== this.drawnWithheld || alone(this.state) !== this.drawnAlone;
    if (this.module?.live || changed) this.draw();
  }

  draw() {
    const module = this.module;
    if (!module || !this.ctx) return;
    this.drawnWithheld = this.state.withheld?.reason ?? null;
    this.drawnAlone = alone(this.state);
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
    const explain = this.view?.explain;
    this.explanation.showError(this.error);
    this.explanation.showTitle(explain, step ? `${integer(this.stepIndex() + 1)}. ${step.title}` : module.title);
    // what the step's words refer to (a CSS selector; tests check it is on the first screen)
    this.explanation.showFigure(step?.figure ?? module.figure);
    if (answer && step) {
      if (!module.live) this.safely("update", () => this.view?.update?.(answer, step.id));
      this.safely("text", () => this.explanation.showText(explain, typeof step.text === "function" ? step.text(answer, this.ctx) : (step.text ?? "")));
      this.showNumbers(answer, step.id, this.ctx);
    }
    this.stage?.requestRender();
    this.hooks.drawn(ready);
  }

  showComing() {
    this.explanation.showComing(this.title());
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
    this.explanation.clear();
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
    const code =
      answer && module?.code
        ? () => {
            let text = "";
            this.safely("code", () => (text = module.code(answer, stepId, ctx)));
            return text;
          }
        : null;
    this.numbersPanel.show(numbers, code, (answer?.tokens?.length ?? 0) > LATER_CODE_TOKENS);
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
