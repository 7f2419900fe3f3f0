// The attention view's words about itself: the editor's note, the 3D view's note and the
// banner (an error or a notice). Drawn from the state and the derived view; none keeps state.

const $ = (id) => document.getElementById(id);

/** The note above the editor, and the source boxes set to the source shown. */
export function renderEditorNote(state) {
  const note = $("editor-note");
  const sentence = Boolean(state.sentence);
  $("editor").classList.toggle("model-mode", sentence);
  if (sentence) {
    note.textContent =
      "The numbers of a typed sentence are the real model's (32 per vector, 6 layers × 12 heads), " +
      "so there is nothing to edit here: pick an example above to set Q, K and V by hand.";
  } else if (state.edited) {
    note.textContent =
      "You have edited the numbers: the page recomputes as you type, and the address bar keeps " +
      "your edits, so a copied link shows exactly this.";
  } else {
    note.textContent = "Every number of the example is editable: change one and watch the table and the links follow.";
  }
  $("example-select").value = state.example && !state.edited ? state.example : "";
  if (state.sentence && $("sentence-input").value !== state.sentence) $("sentence-input").value = state.sentence;
}

/** The note under the 3D view: what its arrows are (two coordinates, or a PCA), and its window. */
export function renderSceneNote(v) {
  const data = v.data;
  const dk = data.d_k;
  const dv = data.v[0].length;
  if (v.sentenceMode) {
    const drawn = v.shown.drawn ?? {};
    const pct = (x) => `${Math.round(x * 100)} %`;
    const parts = [
      `q and k drawn by PCA over this head's queries and keys: the first two components explain ${pct(drawn.qk ?? 1)} of their variance; ` +
        `v (and z) by their own PCA (${pct(drawn.vz ?? 1)}). Arrows start at each word and show where its vector sits relative to the mean.` +
        ` The table and the arithmetic use all ${dk} numbers; hover a word for them.`,
    ];
    if (v.merged) parts.push("A merged word's arrows are the means of its pieces'.");
    if (data.mean_over?.length) parts.push(`For a mean, q, k and v are the means of the ${data.mean_over.join(" and ")}' vectors (a summary for drawing).`);
    const w = v.sceneWindow;
    if (w) parts.push(`The 3D view shows ${w.count} of the ${w.n} rows (${w.from}–${w.to}, around the focused one)${w.tableAll ? "; the table has all" : ""}.`);
    $("scene-note").textContent = parts.join(" ");
    return;
  }
  $("scene-note").textContent =
    dk > 2 || dv > 2
      ? `These vectors have d_k = ${dk} and d_v = ${dv} coordinates; the arrows show only the first two ` +
        "(x to the right, y up). The table and the arithmetic use all of them."
      : "Each vector has two coordinates, drawn in the plane of its row: x to the right, y up " +
        "(q and k share one scale, v and z another).";
}

/** The banner over the table: the server's or the editor's errors, else a one-off notice. */
export function renderBanner(state, data) {
  const banner = $("error-banner");
  let text = "";
  if (state.errors.length) {
    const messages = state.errors.map((e) => e.msg).join(" ");
    if (state.sentence) text = data ? `${messages} (The page still shows the last answer.)` : messages;
    else text = data ? "That edit cannot be computed yet (see the message by the editor below); the page still shows the last valid numbers." : messages;
  } else if (state.notice) text = state.notice;
  banner.hidden = !text;
  banner.textContent = text;
}

/** What is held back and why (a quiz, the teacher's H, predict first), or nothing. */
export function renderWithheld(withheld) {
  const note = $("withheld-note");
  const why = {
    quiz: "The class is answering a question: the weights and everything computed from them stay hidden until the teacher reveals the answer.",
    hidden: "The teacher has hidden the numbers for now.",
  };
  const text = withheld && withheld.reason !== "predict" ? (why[withheld.reason] ?? "The weights are hidden for now.") : "";
  note.hidden = !text;
  note.textContent = text;
}
