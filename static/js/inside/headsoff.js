// Switching heads off from the overview (sentence mode): a switch that turns clicks on the
// overview's heads into "off / on" instead of "show this head", and what the heads switched off
// change, from POST /api/ablate: for a decoder the ten likeliest next tokens before and after (the
// winner's change first), for both models how far each token's final vector turned (its cosine
// before · after), and the shown head's weights with and without them (when it is a later layer's).
// The set is the state's `off` (state.js): in the URL, a room's snapshot and a saved lesson.

import { apiPost } from "../api.js";
import { el } from "../dom.js";
import { decimal, integer, listOf, percent, t } from "../i18n.js";

const piece = (token) => token.replace(/\n/g, "↵");
const headName = ([layer, head]) => t("overview.off.head", { layer: integer(layer), head: integer(head) });

export class HeadsOff {
  /** @param store the page's store; @param box the element the switch and the results go into */
  constructor(store, box) {
    this.store = store;
    this.state = store.state;
    this.box = box;
    this.switching = false;
    this.asked = ""; // the request whose answer is shown (or on its way)
    this.controller = null;
    this.toggle = el("button", { type: "button", "aria-pressed": "false", dataset: { testid: "heads-off-switch" } }, t("overview.off.switch"));
    this.toggle.addEventListener("click", () => this.setSwitching(!this.switching));
    this.clear = el("button", { type: "button", dataset: { testid: "heads-off-clear" } }, t("overview.off.clear"));
    this.clear.addEventListener("click", () => store.act.clearHeadsOff());
    this.hint = el("span", { className: "heads-off-hint", dataset: { testid: "heads-off-hint" } });
    this.results = el("div", { className: "heads-off-results", dataset: { testid: "heads-off-results" }, "aria-live": "polite" });
    const bar = el("div", { className: "heads-off-bar" });
    bar.append(this.toggle, this.clear, this.hint);
    box.append(bar, this.results);
    store.subscribe(() => this.refresh());
    this.refresh();
  }

  setSwitching(on) {
    this.switching = on;
    this.toggle.setAttribute("aria-pressed", String(on));
    this.toggle.textContent = t(on ? "overview.off.done" : "overview.off.switch");
    this.refresh();
  }

  /** The request the state asks for now (null: no head is off, or nothing to ask about). */
  request() {
    const s = this.state;
    if (!s.sentence || !s.off.length || s.withheld) return null;
    const body = { sentence: s.sentence, heads: s.off };
    if (s.modelId) body.model = s.modelId;
    if (Number.isInteger(s.layer)) body.layer = s.layer;
    if (Number.isInteger(s.head)) body.head = s.head;
    return body;
  }

  refresh() {
    const s = this.state;
    this.clear.hidden = !s.off.length;
    const n = s.off.length;
    this.hint.textContent = this.switching ? t("overview.off.hint") : n ? t("overview.off.list", { n, heads: listOf(s.off.map(headName)) }) : "";
    const body = this.request();
    const key = body ? JSON.stringify(body) : "";
    if (key === this.asked) return;
    this.asked = key;
    this.controller?.abort();
    this.results.replaceChildren();
    delete this.results.dataset.ready;
    if (!body) return;
    const controller = new AbortController();
    this.controller = controller;
    this.results.append(el("p", { className: "heads-off-wait" }, t("overview.off.wait")));
    apiPost("/api/ablate", body, controller.signal)
      .then((a) => {
        if (controller.signal.aborted) return;
        this.results.replaceChildren(...this.render(a));
        this.results.dataset.ready = "true";
      })
      .catch((err) => {
        if (err?.name === "AbortError") return;
        this.results.replaceChildren(el("p", { className: "heads-off-error" }, t("overview.off.error", { error: err.message })));
        this.results.dataset.ready = "true";
      });
  }

  render(a) {
    const out = [];
    if (a.candidates) {
      const before = a.candidates.before;
      const after = a.candidates.after;
      const win = before[0];
      const now = after.find((c) => c.id === win.id)?.p ?? 0;
      const same = after[0].id === win.id;
      const words = { token: piece(win.token), p: percent(win.p), now: percent(now), lead: piece(after[0].token), q: percent(after[0].p) };
      out.push(el("p", { className: "heads-off-winner", dataset: { testid: "heads-off-winner" } }, t(same ? "overview.off.winner" : "overview.off.winnerNew", words)));
      const table = el("table", { className: "ca-table heads-off-table", dataset: { testid: "heads-off-candidates" } });
      table.append(el("caption", {}, t("overview.off.caption")));
      const head = el("tr");
      for (const h of ["before", "p", "after", "p"]) head.append(el("th", { scope: "col" }, t(`overview.off.${h}`)));
      table.append(head);
      const token = (c) => t("overview.off.token", { token: piece(c.token) });
      before.forEach((c, i) => {
        const tr = el("tr", { dataset: { testid: `heads-off-candidate-${i}` } });
        tr.append(el("td", {}, token(c)), el("td", {}, percent(c.p)), el("td", {}, token(after[i])), el("td", {}, percent(after[i].p)));
        table.append(tr);
      });
      out.push(table);
    }
    const least = Math.min(...a.cosine);
    const k = a.cosine.indexOf(least);
    const mean = a.cosine.reduce((x, y) => x + y, 0) / a.cosine.length;
    const cosine = { token: piece(a.tokens[k]), least: decimal(least, 4), mean: decimal(mean, 4) };
    out.push(el("p", { className: "heads-off-cosine", dataset: { testid: "heads-off-cosine" } }, t("overview.off.cosine", cosine)));
    if (a.first_layer !== null && a.layer > a.first_layer) {
      let most = 0;
      a.weights.before.forEach((row, i) => row.forEach((w, j) => (most = Math.max(most, Math.abs(a.weights.after[i][j] - w)))));
      const view = { layer: integer(a.layer), head: integer(a.head), first: integer(a.first_layer), most: decimal(most, 3) };
      out.push(el("p", { className: "heads-off-view", dataset: { testid: "heads-off-view" } }, t("overview.off.view", view)));
    }
    return out;
  }
}
