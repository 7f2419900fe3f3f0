// The chapter registry: the lesson's order. Adding a chapter is its own file
// (static/js/chapters/<id>.js, see CONTRACT.md) and one line here. The title is used while the
// module loads (or when it cannot: the chapter then says "coming"), and by the stepper's way on
// to the next chapter; it is read in the page's language (below).

import { has, t } from "../i18n.js";

export const CHAPTERS = [
  { id: "rnn", title: "Why not an RNN", load: () => import("./rnn.js") },
  { id: "projections", title: "Where q, k and v come from", load: () => import("./projections.js") },
  { id: "steps", title: "The five steps of attention", load: () => import("./steps.js") },
  { id: "scaling", title: "Why divide by √d_k", load: () => import("./scaling.js") },
  { id: "masks", title: "Full vs causal", load: () => import("./masks.js") },
  { id: "heads", title: "Many heads, then W_O", load: () => import("./heads.js") },
  { id: "positions", title: "Word order", load: () => import("./positions.js") },
  { id: "block", title: "The transformer block", load: () => import("./block.js") },
  { id: "mistakes", title: "Common mistakes", load: () => import("./mistakes.js") },
  { id: "writing", title: "Writing one token at a time", load: () => import("./writing.js") },
  { id: "today", title: "Attention in today's models", load: () => import("./today.js") },
  { id: "tiles", title: "Attention without the n×n table", load: () => import("./tiles.js") },
  { id: "inside", title: "Look inside", load: () => import("./inside.js") },
];

export const CHAPTER_IDS = CHAPTERS.map((c) => c.id);

// Each entry's title in the page's language, read when it is drawn: the catalogs' chapter.<id>.title
// where they have it (the chapters whose words are in the catalogs), else the English one above.
for (const c of CHAPTERS) {
  const english = c.title;
  const key = `chapter.${c.id}.title`;
  Object.defineProperty(c, "title", { enumerable: true, get: () => (has(key) ? t(key) : english) });
}
