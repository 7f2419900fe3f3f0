// The whole lesson as one .html file a student opens at home, offline: every view's numbers (both
// masks of an attention view, as the single-view export has them) or, for other chapters, the
// picture and numbers, in the export's own viewer (export/html.js lessonHtml). The students' file
// carries no note at all (a note may hold a question's answer); the teacher's keeps them.
import { fileName, save } from "../export/download.js";
import { isAttention, lessonHtml } from "../export/html.js";
import { bothMasks } from "../export/index.js";
import { scenePicture } from "../export/snapshot.js";
import { STEPS } from "../attention/stages.js";
import { eachView } from "./lesson-views.js";

/** The viewer's step for a view: its own, else the step that shows its stage (the masks chapter's "causal" → mask). */
export function viewerStep(shown) {
  return STEPS.find((s) => s.id === shown.step)?.id ?? STEPS.find((s) => s.stage === shown.stage)?.id ?? "softmax";
}

export async function offlineLesson(lesson, progress, { notes = false } = {}) {
  const app = document.getElementById("app");
  const assets = { viewer: app.dataset.viewerSrc, styles: app.dataset.stylesSrc };
  if (!assets.viewer || !assets.styles) throw new Error("the page was served without its bundle (run make)");
  const views = [];
  await eachView(lesson, async (view, shown) => {
    if (isAttention(shown?.answer)) {
      views.push({ note: notes ? view.note : "", step: viewerStep(shown), mask: shown.mask, focus: shown.focus ?? 0, answers: await bothMasks(shown) });
    } else {
      const canvas = shown?.canvas ? scenePicture(shown, 1) : null;
      views.push({ note: notes ? view.note : "", title: shown?.title ?? "", text: shown?.text ?? "", picture: canvas ? canvas.toDataURL("image/png") : null, numbers: shown?.answer ?? {} });
    }
  }, progress);
  const html = await lessonHtml(lesson.title, views, assets);
  const name = notes ? `${lesson.title} (teacher)` : lesson.title;
  save(new Blob([html], { type: "text/html;charset=utf-8" }), `${fileName("lesson", name)}.html`);
  return views.length;
}
