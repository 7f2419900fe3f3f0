// The teacher's drop-down panels (Lessons, Room) and the chapter menu: one open at a time, so that
// none lies over another's buttons (the Lessons panel covered the Room menu's "Close the room").

/** Watch the <details> panels of `bar` and the Chapters button: opening one closes the others. */
export function onePanelAtATime(bar) {
  const chapters = document.getElementById("chapters-toggle");
  const panels = () => [...bar.querySelectorAll("details")];
  const chaptersOpen = () => chapters?.getAttribute("aria-expanded") === "true";
  bar.addEventListener(
    "toggle", // does not bubble: heard on the way down
    (e) => {
      const opened = e.target;
      if (!(opened instanceof HTMLDetailsElement) || !opened.open) return;
      for (const other of panels()) if (other !== opened) other.open = false;
      if (chaptersOpen()) chapters.click(); // the chapter menu closes as its own button closes it
    },
    true,
  );
  chapters?.addEventListener("click", () => {
    if (chaptersOpen()) for (const panel of panels()) panel.open = false;
  });
}
