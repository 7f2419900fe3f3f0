// A single .html file of the current view that opens offline, with no server: the numbers as
// JSON, the viewer (static/js/export/standalone.js, bundled with three.js) and the page's styles,
// all inside the file. For the attention view it steps, orbits and toggles the mask; for another
// chapter it holds the chapter's picture and every number of the server's answer. A whole lesson
// (lessonHtml) is one such file with every view in it, each with its note. The file is in the
// page's language: its own words from the catalogs, and the catalog itself inside it for the viewer.

import { getText } from "../api.js";
import { catalog, dir, language, locale, t } from "../i18n.js";

/** Text that is safe inside <script type="application/json"> (no "</script>", no "<!--"). */
export function jsonForScript(value) {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/** Whether an answer is an attention computation the viewer can step through. */
export function isAttention(answer) {
  return Boolean(answer && answer.tokens && answer.q && answer.k && answer.v && answer.scores && answer.weights && answer.output);
}

/**
 * @param view     pageview.js currentView()
 * @param answers  { full?, causal? } for the attention view
 * @param assets   { viewer: URL of the bundled viewer, styles: URL of the page's styles }
 * @param picture  a PNG data: URL of the 3-D view (for chapters without the attention view)
 */
export async function standaloneHtml(view, answers, assets, picture = null) {
  const words = view.answer?.tokens ? t("format.quote", { text: view.answer.tokens.join(" ") }) : null;
  const title = t("export.file.title", { what: (answers && words) || view.title || view.chapter || t("export.file.aView") });
  const styles = await getText(assets.styles);
  if (answers) {
    const data = { step: view.step, mask: view.mask, focus: view.focus, answers };
    return viewerFile(title, styles, await getText(assets.viewer), `<h1>${escapeHtml(title)}</h1>\n${viewerMarkup()}`, data);
  }
  const numbers = JSON.stringify(view.answer ?? {}, null, 1);
  return `<!doctype html>
${htmlTag()}<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles.replace(/<\/style/gi, "<\\/style")}</style></head>
<body class="standalone"><main id="app" class="standalone-view"><h1>${escapeHtml(title)}</h1>
${view.text ? `<p>${escapeHtml(view.text)}</p>` : ""}
${picture ? `<img alt="${escapeHtml(title)}" src="${picture}" style="max-width:100%">` : ""}
<h2>${escapeHtml(t("export.file.numbers"))}</h2><pre dir="ltr">${escapeHtml(numbers)}</pre></main></body></html>
`;
}

/** The file's <html> tag: the page's language and direction. */
const htmlTag = () => `<html lang="${locale()}" dir="${dir()}">`;

/** The viewer's markup for an attention view: steps, masks, the 3-D scene and the table. */
const viewerMarkup = () => `<nav class="stepper" id="stepper" aria-label="${escapeHtml(t("export.file.steps"))}"><div id="steps" class="step-list"></div>
<div class="mask-toggle" role="group" aria-label="${escapeHtml(t("page.mask"))}"><button type="button" id="mask-full">${escapeHtml(t("page.mask.full"))}</button>
<button type="button" id="mask-causal">${escapeHtml(t("page.mask.causal"))}</button></div></nav>
<div class="workspace" id="viewer"><section class="scene-panel"><div id="scene" class="scene" dir="ltr"></div>
<p class="hint">${escapeHtml(t("export.file.hint"))}</p></section>
<section class="lesson"><div class="explain"><h2 id="step-title"></h2><p id="step-text"></p></div>
<div class="table-wrap"><table id="matrix" class="matrix"></table></div></section></div>`;

/** The catalog of the page's language, for the viewer (English's is inside the viewer already). */
function catalogScript() {
  if (language() === "en") return "";
  return `<script type="application/json" id="attention-i18n">${jsonForScript({ lang: language(), messages: catalog() })}</script>\n`;
}

function viewerFile(title, styles, viewer, body, data) {
  return `<!doctype html>
${htmlTag()}<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles.replace(/<\/style/gi, "<\\/style")}</style></head>
<body class="standalone"><main id="app" class="standalone-view">
${body}</main>
<script type="application/json" id="attention-data">${jsonForScript(data)}</script>
${catalogScript()}<script>${viewer.replace(/<\/script/gi, "<\\/script")}</script>
</body></html>
`;
}

/**
 * A whole lesson as one .html file that opens offline: the same viewer, every view in it.
 * @param title   the lesson's title
 * @param views   [{ note, step, mask, focus, answers }] for attention views, [{ note, title, text, picture, numbers }] else
 * @param assets  as standaloneHtml's
 */
export async function lessonHtml(title, views, assets) {
  const [styles, viewer] = await Promise.all([getText(assets.styles), getText(assets.viewer)]);
  const name = t("export.file.title", { what: title });
  const body = `<h1>${escapeHtml(name)}</h1>
<nav class="offline-lesson-bar" aria-label="${escapeHtml(t("export.file.views"))}"><button type="button" id="lesson-prev">${escapeHtml(t("export.file.prev"))}</button>
<strong id="lesson-where"></strong><button type="button" id="lesson-next">${escapeHtml(t("export.file.next"))}</button>
<p id="lesson-note" class="offline-lesson-note"></p></nav>
${viewerMarkup()}
<section id="still" class="offline-still"><h2 id="still-title"></h2><p id="still-text"></p>
<img id="still-picture" alt="${escapeHtml(t("export.file.picture"))}" style="max-width:100%">
<h3>${escapeHtml(t("export.file.numbers"))}</h3><pre id="still-numbers" dir="ltr"></pre></section>`;
  return viewerFile(name, styles, viewer, body, { lesson: { title, views } });
}
