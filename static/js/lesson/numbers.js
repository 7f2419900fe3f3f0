// The panel under a step (#numpy): the step's numbers (a label and a value each, the value in
// an element with the chapter's data-testid) and its NumPy program with a Copy button.

import { el } from "../dom.js";
import { t } from "../i18n.js";

const $ = (id) => document.getElementById(id);
const whenIdle = (fn) => (window.requestIdleCallback ? window.requestIdleCallback(fn, { timeout: 300 }) : setTimeout(fn, 16));

export class NumbersPanel {
  constructor() {
    this.code = "";
    this.codeJob = 0; // counts the codes asked for: a code written in idle time for an older view is dropped
    this.pendingCode = null; // writes the code of the view on screen, until it is written
    $("numpy-copy").addEventListener("click", () => this.copyCode());
  }

  /**
   * Show `numbers` ([{ label, value, testid }]) and the program `code()` returns (null: none).
   * `later`: write the program in the idle time after the view is drawn, below the fold. A long
   * sentence's code writes out every number of its q, k and v (~1 MB of text for 300 tokens: its
   * writing and its layout took a third of Enter → drawn); the code shown until then is replaced.
   */
  show(numbers, code, later = false) {
    $("lesson-numbers").replaceChildren(
      ...numbers.map((n) => {
        const li = el("li", n.testid ? { dataset: { testid: `${n.testid}-item` } } : {});
        li.append(
          el("span", { className: "number-label" }, n.label),
          el("span", { className: "number-value", dataset: n.testid ? { testid: n.testid } : {} }, n.value),
        );
        return li;
      }),
    );
    $("lesson-numbers").hidden = !numbers.length;
    const writeCode = () => {
      const text = code ? code() : "";
      if (text !== this.code) $("numpy-status").textContent = "";
      this.code = text;
      $("numpy-code").textContent = text;
      $("numpy").hidden = !text && !numbers.length;
      $("numpy-copy").hidden = !text;
    };
    const job = ++this.codeJob;
    this.pendingCode = null;
    if (code && later) {
      this.pendingCode = () => {
        if (job !== this.codeJob) return;
        this.pendingCode = null;
        writeCode();
      };
      $("numpy").hidden = false;
      whenIdle(() => this.pendingCode?.());
    } else {
      writeCode();
    }
  }

  async copyCode() {
    this.pendingCode?.(); // the code of the view on screen, not the one before it
    const status = $("numpy-status");
    try {
      await navigator.clipboard.writeText(this.code);
      status.textContent = t("lesson.copied");
    } catch {
      // no clipboard (an insecure origin, a denied permission): select the code for Ctrl+C
      const range = document.createRange();
      range.selectNodeContents($("numpy-code"));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = t("lesson.selected");
    }
  }
}
