// The projector view's side panels (the step's explanation, its tables, a chapter's controls)
// scaled to the largest size at which they show all they hold: nothing past a box, nothing to
// scroll. CSS zoom scales text, tables and controls together; never below MIN_FIT.

const MIN_FIT = 0.35; // the smallest scale fitPanels() gives a side panel
export const PANELS = ".workspace .lesson, .chapter-side"; // the step's words and tables, beside the 3D view

const within = (e) => e.scrollHeight <= e.clientHeight + 1 && e.scrollWidth <= e.clientWidth + 1;

/** The boxes inside `panel` that clip what they hold (a table's scrolling box, a clamped cell). */
function clippers(panel) {
  return [...panel.querySelectorAll("*")].filter((e) => {
    const s = getComputedStyle(e);
    return (s.overflowX !== "visible" || s.overflowY !== "visible") && e.getClientRects().length;
  });
}

/** Does the panel show all it holds (nothing past its box or past a box inside it, nothing to scroll)? */
function fits(panel, inner) {
  return within(panel) && inner.every(within);
}

/** Fit each side panel; `on` false puts every panel back at its own size. */
export function fitPanels(on) {
  for (const panel of document.querySelectorAll(PANELS)) {
    panel.style.zoom = "";
    delete panel.dataset.fit;
    if (!on || !panel.getClientRects().length) continue;
    const inner = clippers(panel);
    if (fits(panel, inner)) continue;
    let lo = MIN_FIT;
    let hi = 1;
    for (let i = 0; i < 8; i++) {
      const mid = (lo + hi) / 2;
      panel.style.zoom = String(mid);
      if (fits(panel, inner)) lo = mid;
      else hi = mid;
    }
    panel.style.zoom = String(lo);
    panel.dataset.fit = lo.toFixed(3);
  }
}
