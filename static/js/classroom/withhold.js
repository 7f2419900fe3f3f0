// Holding the weights back: while a quiz waits for answers, while the projector's H hides the
// numbers, or while a follower's teacher has hidden them, no part of the page may show anything
// computed from the attention weights (the numbers panel, the arithmetic, the table's colours,
// the 3D links' widths and labels, the exports). The scores, the question's givens, stay.
//
//   withhold(reason, on)   add or drop one reason ("quiz", "numbers", "teacher"); the page
//                          withholds while any reason holds
//   withheld()             true while any reason holds
//
// The page's store owns the flag itself (pageview.js withhold(reason) / release(): derive() then
// leaves every weight-derived value out of the view, and currentView().answer holds no weights);
// body.cr-withheld is the CSS's half (and the tests' hook): the arithmetic, the numbers panel and
// the export bar leave the screen at once.

import { release, withhold as pageWithhold } from "../pageview.js";

const reasons = new Set();
const PAGE_REASON = { quiz: "quiz", numbers: "hidden", teacher: "hidden" }; // the page's names

export function withhold(reason, on) {
  const before = [...reasons].sort().join(" ");
  if (on) reasons.add(reason);
  else reasons.delete(reason);
  const now = [...reasons].sort().join(" ");
  document.body.classList.toggle("cr-withheld", reasons.size > 0);
  document.body.dataset.withheld = now;
  if (before === now) return;
  const first = reasons.has("quiz") ? "quiz" : [...reasons][0];
  if (first) pageWithhold(PAGE_REASON[first] ?? first);
  else release();
}

export const withheld = () => reasons.size > 0;
