// The lesson's contents list (#contents, opened by #chapters-toggle): one link per chapter of
// chapters/index.js, with the module's own title and summary once it has loaded ("coming" when
// it cannot). A plain click opens the chapter here; Ctrl/⌘/Shift-click still opens a new tab.

import { CHAPTERS } from "../chapters/index.js";
import { el } from "../dom.js";
import { integer, t } from "../i18n.js";

const $ = (id) => document.getElementById(id);

export class Contents {
  /**
   * @param load  id → Promise<module | null> (lesson/modules.js)
   * @param open  id → opens that chapter at its first step (a history entry)
   */
  constructor({ load, open }) {
    const items = CHAPTERS.map((c, i) => {
      const a = el("a", { href: `?chapter=${c.id}`, dataset: { testid: `chapter-link-${c.id}`, chapter: c.id } });
      a.append(el("span", { className: "num" }, integer(i + 1)), el("span", { className: "chapter-title" }, c.title));
      a.append(el("span", { className: "chapter-summary" }, ""));
      a.addEventListener("click", (e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return; // a new tab keeps working
        e.preventDefault();
        this.toggle(false);
        open(c.id);
        $("chapters-toggle").focus();
      });
      return el("li", {}, null).appendChild(a).parentNode;
    });
    $("contents-list").replaceChildren(...items);
    // fill in the modules' own titles and summaries, and mark the ones still coming
    for (const c of CHAPTERS) {
      load(c.id).then((m) => {
        const a = $("contents-list").querySelector(`[data-chapter="${c.id}"]`);
        a.querySelector(".chapter-title").textContent = m?.title ?? c.title;
        a.querySelector(".chapter-summary").textContent = m ? (m.summary ?? "") : t("lesson.coming");
        a.classList.toggle("coming", !m);
      });
    }
    $("chapters-toggle").addEventListener("click", () => this.toggle());
    $("contents").addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.toggle(false);
    });
  }

  /** Open (true), close (false) or flip (null) the list; closing keeps the focus in sight. */
  toggle(open = null) {
    const nav = $("contents");
    const show = open ?? nav.hidden;
    if (!show && nav.contains(document.activeElement)) $("chapters-toggle").focus(); // the focus stays in sight
    nav.hidden = !show;
    $("chapters-toggle").setAttribute("aria-expanded", String(show));
    if (show) (nav.querySelector('[aria-current="page"]') ?? nav.querySelector("a"))?.focus();
  }

  /** Mark chapter `id` as the one on screen. */
  mark(id) {
    for (const a of $("contents-list").querySelectorAll("a")) {
      if (a.dataset.chapter === id) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }
}
