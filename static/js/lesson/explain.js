// The explanation beside a chapter's 3D view (#chapter-view): the step's title and words, the
// banner of a failed load (the last answer stays drawn), "coming" for a chapter not written
// yet, and which figure the words refer to (#app[data-figure]: tests check it is on the first
// screen). A chapter whose view has its own explanation box (view.explain) gets its words there.

import { t } from "../i18n.js";

const $ = (id) => document.getElementById(id);

export class Explanation {
  /** The chapters' own view (its 3D stage, explanation and panel) in place of the attention view. */
  showChapterView() {
    $("app").dataset.layout = "chapter";
    $("chapter-view").hidden = false;
  }

  /** The step's title, in `explain` ({ title, text } elements of the chapter's view) or the chapter view's. */
  showTitle(explain, title) {
    (explain?.title ?? $("chapter-title")).textContent = title;
  }

  /** The step's words, where showTitle puts the title. */
  showText(explain, text) {
    (explain?.text ?? $("chapter-text")).textContent = text;
  }

  /** A failed load's message (null: none). */
  showError(error) {
    const banner = $("chapter-error");
    banner.hidden = !error;
    banner.textContent = error ? t("lesson.lastAnswer", { message: error.message }) : "";
  }

  /** What the step's words refer to: a CSS selector, or "" for the chapter's stage and panel. */
  showFigure(selector) {
    $("app").dataset.figure = selector ?? "";
  }

  /** A chapter not written yet (or not on this server). */
  showComing(title) {
    this.showChapterView();
    $("chapter-title").textContent = title;
    $("chapter-text").textContent = "";
    $("chapter-coming").hidden = false;
    $("chapter-error").hidden = true;
  }

  /** A chapter that is (coming: false) or is not yet (true) on screen. */
  coming(on) {
    $("chapter-coming").hidden = !on;
  }

  /** The chapter was left: its words and panel go. */
  clear() {
    $("chapter-panel").replaceChildren();
    $("chapter-text").textContent = "";
  }
}
