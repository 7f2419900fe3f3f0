// Phones: Back, Chapters and Next float at the bottom of the screen, within a thumb's reach.
// Where a 3D view reaches into that strip they would cover its labels, so they step aside
// (fade out, and take no taps) until the view has scrolled past; the step buttons at the top
// of the page stay. The page's <body> carries the class `bar-off` meanwhile.

const STRIP = 64; // CSS pixels at the bottom of the screen the floating buttons take
const PHONE = window.matchMedia("(max-width: 600px)");

/** Watch `views` (the 3D views' containers) as the page scrolls and resizes. */
export function keepBarOffViews(views) {
  const frame = { pending: false };
  const place = () => {
    frame.pending = false;
    const under = (node) => {
      const r = node.getBoundingClientRect();
      return r.height > 0 && r.bottom > window.innerHeight - STRIP && r.top < window.innerHeight;
    };
    document.body.classList.toggle("bar-off", PHONE.matches && views.some(under));
  };
  const soon = () => {
    if (frame.pending) return;
    frame.pending = true;
    requestAnimationFrame(place);
  };
  window.addEventListener("scroll", soon, { passive: true });
  window.addEventListener("resize", soon);
  new ResizeObserver(soon).observe(document.body);
  place();
}
