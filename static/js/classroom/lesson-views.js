// Going through a lesson's views in the page: each one applied and drawn in turn, then back to the
// view the teacher had. The handout and the offline lesson take what they need from each view here.
import { has, t } from "../i18n.js";
import { applyViewState, currentView, viewState } from "../pageview.js";
import { viewOnly } from "./session.js";

const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

/** A short line that says what a view shows, in the reader's language: its chapter's title, the step's short
 *  name, the focus, the mask, the typed sentence ("The five steps of attention · softmax · focus 3 · causal
 *  (GPT)"); an id the catalogs do not know is shown as it is. */
export function viewSummary(state) {
  const chapter = state.chapter ?? "steps";
  const step = state.step ?? state.chapter_step ?? null;
  const stepKey = step && step.replace(/-(\w)/g, (_, c) => c.toUpperCase()); // "no-scale" → noScale
  const parts = [named(`chapter.${chapter}.title`, chapter), step && named(`chapter.${chapter}.${stepKey}.short`, step)];
  if (state.focus !== undefined) parts.push(t("classroom.views.focus", { n: String(state.focus) }));
  if (state.mask) parts.push(named(`page.mask.${state.mask}`, state.mask));
  if (state.sentence) parts.push(t("format.quote", { text: `${state.sentence.slice(0, 40)}${state.sentence.length > 40 ? "…" : ""}` }));
  return parts.filter(Boolean).join(" · ");
}

const named = (key, id) => (has(key) ? t(key) : id);

/**
 * visit(view, shown, index) for each view, after the page drew it (shown = pageview.js currentView());
 * progress(index) before each. The page goes back to the view it had, even after an error.
 */
export async function eachView(lesson, visit, progress = () => {}) {
  const before = viewOnly(viewState());
  try {
    for (const [i, view] of lesson.views.entries()) {
      progress(i);
      await applyViewState(view.state);
      await frame();
      await visit(view, currentView(), i);
    }
  } finally {
    await applyViewState(before);
  }
}
