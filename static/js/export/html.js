// A single .html file of the current view that opens offline, with no server: the numbers as
// JSON, the viewer (static/js/export/standalone.js, bundled with three.js) and the page's styles,
// all inside the file. For the attention view it steps, orbits and toggles the mask; for another
// chapter it holds the chapter's picture and every number of the server's answer.

/** Text that is safe inside <script type="application/json"> (no "</script>", no "<!--"). */
export function jsonForScript(value) {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function text(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.text();
}

/** Whether an answer is an attention computation the viewer can step through. */
export function isAttention(answer) {
  return Boolean(answer && answer.tokens && answer.q && answer.k && answer.v && answer.scores && answer.weights && answer.output);
}

/**
 * @param view     hub.currentView()
 * @param answers  { full?, causal? } for the attention view
 * @param assets   { viewer: URL of the bundled viewer, styles: URL of the page's styles }
 * @param picture  a PNG data: URL of the 3-D view (for chapters without the attention view)
 */
export async function standaloneHtml(view, answers, assets, picture = null) {
  const words = view.answer?.tokens ? `“${view.answer.tokens.join(" ")}”` : null;
  const title = `Attention, in 3D: ${(answers && words) || view.title || view.chapter || "a view"}`;
  const styles = await text(assets.styles);
  if (answers) {
    const viewer = await text(assets.viewer);
    const data = { step: view.step, mask: view.mask, focus: view.focus, answers };
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles.replace(/<\/style/gi, "<\\/style")}</style></head>
<body class="standalone"><main id="app" class="standalone-view">
<h1>${escapeHtml(title)}</h1>
<nav class="stepper" aria-label="Steps of attention"><div id="steps" class="step-list"></div>
<div class="mask-toggle" role="group" aria-label="Mask"><button type="button" id="mask-full">full (BERT)</button>
<button type="button" id="mask-causal">causal (GPT)</button></div></nav>
<div class="workspace"><section class="scene-panel"><div id="scene" class="scene"></div>
<p class="hint">Drag to orbit, scroll to zoom; ← → step, M mask. Every number was computed by the Attention, in 3D server.</p></section>
<section class="lesson"><div class="explain"><h2 id="step-title"></h2><p id="step-text"></p></div>
<div class="table-wrap"><table id="matrix" class="matrix"></table></div></section></div></main>
<script type="application/json" id="attention-data">${jsonForScript(data)}</script>
<script>${viewer.replace(/<\/script/gi, "<\\/script")}</script>
</body></html>
`;
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
