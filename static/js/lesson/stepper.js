// The stepper above a chapter: "Chapter k of n: title", a button per step, ← Previous and
// Next →, and at the chapter's last step the way on to the next chapter (in Next's place, so
// nothing moves).

import { CHAPTER_IDS, CHAPTERS } from "../chapters/index.js";
import { el } from "../dom.js";
import { integer, t } from "../i18n.js";

const $ = (id) => document.getElementById(id);

export class Stepper {
  /**
   * @param choose       stepId → go to that step of this chapter
   * @param move         ±1 → the previous or next step
   * @param nextChapter  1 → the next chapter
   */
  constructor({ choose, move, nextChapter }) {
    this.choose = choose;
    $("prev-step").addEventListener("click", () => move(-1));
    $("next-step").addEventListener("click", () => move(1));
    $("next-chapter").addEventListener("click", () => nextChapter(1));
  }

  /** The buttons of chapter `chapterId`'s `steps`, and its name. */
  build(steps, chapterId, title) {
    const buttons = steps.map((step, i) => {
      const btn = el("button", { type: "button", dataset: { step: step.id, testid: `step-${step.id}` } });
      btn.append(el("span", { className: "num" }, integer(i + 1)), el("span", { className: "step-name" }, step.short ?? step.id));
      btn.title = step.title;
      btn.addEventListener("click", () => this.choose(step.id));
      const li = el("li");
      li.append(btn);
      return li;
    });
    $("step-list").replaceChildren(...buttons);
    const k = CHAPTER_IDS.indexOf(chapterId);
    $("chapter-name").textContent = t("lesson.chapterOf", { k: integer(k + 1), n: integer(CHAPTERS.length), title });
    const next = CHAPTERS[k + 1];
    $("next-chapter").querySelector(".next-title").textContent = next ? t("lesson.nextTitle", { title: next.title }) : "";
  }

  /** Mark step `stepId` (number `index` of `count`) of chapter `chapterId` as the one on screen. */
  mark(stepId, index, count, chapterId) {
    for (const btn of $("step-list").querySelectorAll("button")) {
      const on = btn.dataset.step === stepId;
      btn.classList.toggle("current", on);
      if (on) btn.setAttribute("aria-current", "step");
      else btn.removeAttribute("aria-current");
    }
    const last = index >= count - 1;
    $("prev-step").disabled = index <= 0;
    $("next-step").disabled = last;
    // at a chapter's last step, the way on is the next chapter (it takes the place of Next, so nothing moves)
    const onward = last && CHAPTER_IDS.indexOf(chapterId) < CHAPTER_IDS.length - 1;
    $("next-chapter").hidden = !onward;
    $("next-step").hidden = onward;
  }
}
