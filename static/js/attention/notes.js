// The attention view's words about itself: the editor's note, the 3D view's note and the
// banner (an error or a notice). Drawn from the state and the derived view; none keeps state.

import { andList, integer, language, percent, t } from "../i18n.js";

const $ = (id) => document.getElementById(id);
const english = () => language() === "en";

/** The note above the editor, and the source boxes set to the source shown. */
export function renderEditorNote(state) {
  const note = $("editor-note");
  const sentence = Boolean(state.sentence);
  $("editor").classList.toggle("model-mode", sentence);
  if (sentence) {
    note.textContent = t("editor.note.sentence");
  } else if (state.edited) {
    note.textContent = t("editor.note.edited");
  } else {
    note.textContent = t("editor.note.example");
  }
  $("example-select").value = state.example && !state.edited ? state.example : "";
  if (state.sentence && $("sentence-input").value !== state.sentence) $("sentence-input").value = state.sentence;
}

/** The note under the 3D view: what its arrows are (two coordinates, or a PCA), and its window. */
export function renderSceneNote(v) {
  const data = v.long ? v.scene.data : v.data; // a long sentence: the window's rows (attention/longview.js)
  const dk = data.d_k;
  const dv = data.v[0].length;
  if (v.sentenceMode) {
    const drawn = (v.long ? v.scene.data : v.shown).drawn ?? {};
    const pct = (x) => (english() ? `${Math.round(x * 100)} %` : percent(x, 0));
    const parts = [t("scene.note.pca", { qk: pct(drawn.qk ?? 1), vz: pct(drawn.vz ?? 1), dk })];
    if (v.merged) parts.push(t("scene.note.merged"));
    if (data.mean_over?.length) parts.push(t("scene.note.mean", { over: andList(data.mean_over.map((name) => t("arith.over", { name }))) }));
    const w = v.sceneWindow;
    if (w?.long) parts.push(t("scene.note.long", { count: w.count, n: integer(w.n), from: integer(w.from), to: integer(w.to), top: v.scene.blocks.top.length }));
    else if (w) parts.push(t("scene.note.window", { count: w.count, n: w.n, from: integer(w.from), to: integer(w.to), all: String(Boolean(w.tableAll)) }));
    $("scene-note").textContent = parts.join(" ");
    return;
  }
  $("scene-note").textContent = dk > 2 || dv > 2 ? t("scene.note.many", { dk, dv }) : t("scene.note.two");
}

/** The banner over the table: the server's or the editor's errors, else a one-off notice. */
export function renderBanner(state, data) {
  const banner = $("error-banner");
  let text = "";
  if (state.errors.length) {
    const messages = state.errors.map((e) => e.msg).join(" ");
    if (state.sentence) text = data ? t("banner.lastAnswer", { messages }) : messages;
    else text = data ? t("banner.badEdit") : messages;
  } else if (state.notice) text = state.notice;
  banner.hidden = !text;
  banner.textContent = text;
}

/** What is held back and why (a quiz, the teacher's H, predict first), or nothing. */
export function renderWithheld(withheld) {
  const note = $("withheld-note");
  const text = withheld && withheld.reason !== "predict" ? t("withheld.reason", { reason: withheld.reason }) : "";
  note.hidden = !text;
  note.textContent = text;
}
