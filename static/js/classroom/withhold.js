// Holding the weights back: while a quiz waits for answers, while the projector's H hides the
// numbers, or while a follower's teacher has hidden them, no part of the page may show anything
// computed from the attention weights (the numbers panel, the arithmetic, the table's colours,
// the 3D links' widths and labels, the exports). The scores, the question's givens, stay.
//
//   withhold(reason, on)   add or drop one reason ("quiz", "numbers", "teacher"); the page
//                          withholds while any reason holds
//
// The reasons are the page's store's (state.holds, through pageview.js withhold(reason, on):
// derive() then leaves every weight-derived value out of the view, and currentView().answer
// holds no weights); this module keeps none. body.cr-withheld is the CSS's half (and the tests'
// hook): the arithmetic, the numbers panel and the export bar leave the screen at once.

import { withhold as pageWithhold, withholding } from "../pageview.js";

export function withhold(reason, on) {
  pageWithhold(reason, on);
  const holds = withholding();
  document.body.classList.toggle("cr-withheld", holds.length > 0);
  document.body.dataset.withheld = holds.join(" ");
}
