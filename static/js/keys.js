// The page's keyboard shortcuts. They work wherever the keyboard focus is, except in a text
// field (where the keys type or move the caret): after clicking a checkbox or a button, → and M
// still work (issue 11, item 9).
//
//   ← →          previous / next step of the chapter
//   PageUp/Down  walk the whole lesson (presentation clickers send these)
//   M            switch the mask (attention chapters)
//   1–9          focus a word (attention chapters)
//   Escape       close the contents list

const TYPING_INPUTS = new Set(["text", "search", "email", "url", "tel", "password", "number", "date", "time", "range"]);

/** Does the element take keys for itself (text entry, a select's arrows, a slider)? */
export function isTextField(t) {
  if (!(t instanceof HTMLElement)) return false;
  if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
  return t.tagName === "INPUT" && TYPING_INPUTS.has((t.getAttribute("type") ?? "text").toLowerCase());
}

/** `on`: { step(delta), walk(delta), mask(), focus(i), escape() → true when it closed something }. */
export function installKeys(on) {
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.defaultPrevented || isTextField(e.target)) return;
    if (e.key === "ArrowRight") on.step(1);
    else if (e.key === "ArrowLeft") on.step(-1);
    else if (e.key === "PageDown") on.walk(1);
    else if (e.key === "PageUp") on.walk(-1);
    else if (e.key === "m" || e.key === "M") on.mask();
    else if (/^[1-9]$/.test(e.key)) on.focus(Number(e.key) - 1);
    else if (e.key === "Escape") {
      if (on.escape()) e.preventDefault(); // only when it closed something of ours (a dialog keeps its Escape)
      return;
    } else return;
    e.preventDefault();
  });
}
