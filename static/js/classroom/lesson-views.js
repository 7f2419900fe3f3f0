// Going through a lesson's views in the page: each one applied and drawn in turn, then back to the
// view the teacher had. The handout and the offline lesson take what they need from each view here.
import { t } from "../i18n.js";
import { applyViewState, currentView, viewState } from "../pageview.js";
import { viewOnly } from "./session.js";

const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

/** A short line that says what a view shows: "steps · softmax · focus 3 · causal". */
export function viewSummary(state) {
  const parts = [state.chapter ?? "steps", state.step ?? state.chapter_step ?? null];
  if (state.focus !== undefined) parts.push(t("classroom.views.focus", { n: String(state.focus) }));
  if (state.mask) parts.push(state.mask);
  if (state.sentence) parts.push(t("format.quote", { text: `${state.sentence.slice(0, 40)}${state.sentence.length > 40 ? "…" : ""}` }));
  return parts.filter(Boolean).join(" · ");
}

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
