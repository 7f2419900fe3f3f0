// The questions the class can be asked (GET /api/questions: the server's catalogue, no answers) and
// where: each question belongs to one chapter and may be asked at some of its steps, where the numbers
// that would give its answer away are not on any screen. The server computes every answer
// (app/classroom/questions.py); this module only says which question a step has, or why it has none.
//
//   loadQuestions()            the catalogue, fetched once
//   questionAt(list, view)     the question of the view's chapter and step, or null
//   whyNone(list, view)        why a step has no question (for the disabled Ask button)
//   stepsTitles(chapter)       the chapter's step ids → titles (from its module)

import { CHAPTERS } from "../chapters/index.js";
import { call } from "../api.js";
import { language, locale, t } from "../i18n.js";

/** "4 (softmax) or 5 (mix)": English's own " or " (as before), other languages' Intl "or" list. */
const orList = (names) => (language() === "en" ? names.join(" or ") : new Intl.ListFormat(locale(), { type: "disjunction" }).format(names));

const asked = { catalogue: null }; // the catalogue's request, once (it does not change while the server runs)

export function loadQuestions() {
  asked.catalogue ??= call("GET", "/api/questions").catch((e) => {
    asked.catalogue = null; // asked again next time
    throw e;
  });
  return asked.catalogue;
}

export function questionAt(list, view) {
  if (!list || !view?.chapter) return null;
  return list.find((q) => q.chapter === view.chapter && q.steps.includes(view.step)) ?? null;
}

/** The chapter's steps as [{ id, title, short }], once its module has loaded (null while it loads). */
const stepsOf = new Map();
export function chapterSteps(chapter) {
  if (!stepsOf.has(chapter)) {
    const entry = CHAPTERS.find((c) => c.id === chapter);
    stepsOf.set(chapter, null);
    entry
      ?.load()
      .then((m) => stepsOf.set(chapter, (m.default?.steps ?? []).map((s) => ({ id: s.id, title: s.title, short: s.short ?? s.id }))))
      .catch(() => stepsOf.delete(chapter));
  }
  return stepsOf.get(chapter);
}

/** "No question at this step: ask at step 4 (softmax) or 5 (mix)." */
export function whyNone(list, view) {
  if (!list) return t("classroom.questions.loading");
  const here = list.filter((q) => q.chapter === view?.chapter);
  if (!here.length) return t("classroom.questions.none");
  const steps = chapterSteps(view.chapter) ?? [];
  const names = [...new Set(here.flatMap((q) => q.steps))].map((id) => {
    const i = steps.findIndex((s) => s.id === id);
    return i >= 0 ? t("classroom.questions.step", { n: i + 1, short: steps[i].short }) : id;
  });
  return t("classroom.questions.elsewhere", { steps: orList(names) });
}
