// A single .html file of the current view that opens offline, with no server: the numbers as
// JSON, the viewer (static/js/export/standalone.js, bundled with three.js) and the page's styles,
// all inside the file. For the attention view it steps, orbits and toggles the mask; for another
// chapter it holds the chapter's picture and every number of the server's answer. A whole lesson
// (lessonHtml) is one such file with every view in it, each with its note.

import { getText } from "../api.js";

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
  const words = view.answer?.tokens ? `“${view.answer.tokens.join(" ")}”` : null;
  const title = `Attention, in 3D: ${(answers && words) || view.title || view.chapter || "a view"}`;
  const styles = await getText(assets.styles);
  if (answers) {
    const data = { step: view.step, mask: view.mask, focus: view.focus, answers };
    return viewerFile(title, styles, await getText(assets.viewer), `<h1>${escapeHtml(title)}</h1>\n${VIEWER}`, data);
  }
  const numbers = JSON.stringify(view.answer ?? {}, null, 1);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles.replace(/<\/style/gi, "<\\/style")}</style></head>
<body class="standalone"><main id="app" class="standalone-view"><h1>${escapeHtml(title)}</h1>
${view.text ? `<p>${escapeHtml(view.text)}</p>` : ""}
${picture ? `<img alt="${escapeHtml(title)}" src="${picture}" style="max-width:100%">` : ""}
<h2>Every number of the server's answer</h2><pre>${escapeHtml(numbers)}</pre></main></body></html>
`;
}

/** The viewer's markup for an attention view: steps, masks, the 3-D scene and the table. */
const VIEWER = `<nav class="stepper" id="stepper" aria-label="Steps of attention"><div id="steps" class="step-list"></div>
<div class="mask-toggle" role="group" aria-label="Mask"><button type="button" id="mask-full">full (BERT)</button>
<button type="button" id="mask-causal">causal (GPT)</button></div></nav>
<div class="workspace" id="viewer"><section class="scene-panel"><div id="scene" class="scene"></div>
<p class="hint">Drag to orbit, scroll to zoom; ← → step, M mask. Every number was computed by the Attention, in 3D server.</p></section>
<section class="lesson"><div class="explain"><h2 id="step-title"></h2><p id="step-text"></p></div>
<div class="table-wrap"><table id="matrix" class="matrix"></table></div></section></div>`;

function viewerFile(title, styles, viewer, body, data) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles.replace(/<\/style/gi, "<\\/style")}</style></head>
<body class="standalone"><main id="app" class="standalone-view">
${body}</main>
<script type="application/json" id="attention-data">${jsonForScript(data)}</script>
<script>${viewer.replace(/<\/script/gi, "<\\/script")}</script>
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
  const name = `Attention, in 3D: ${title}`;
  const body = `<h1>${escapeHtml(name)}</h1>
<nav class="offline-lesson-bar" aria-label="Views of the lesson"><button type="button" id="lesson-prev">← Previous view</button>
<strong id="lesson-where"></strong><button type="button" id="lesson-next">Next view →</button>
<p id="lesson-note" class="offline-lesson-note"></p></nav>
${VIEWER}
<section id="still" class="offline-still"><h2 id="still-title"></h2><p id="still-text"></p>
<img id="still-picture" alt="The view's 3D picture" style="max-width:100%">
<h3>Every number of the server's answer</h3><pre id="still-numbers"></pre></section>`;
  return viewerFile(name, styles, viewer, body, { lesson: { title, views } });
}
