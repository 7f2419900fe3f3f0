// The attention view: the table, the 3D links, the worked arithmetic, predict first, the
// comparison of the masks, the editor's note and sentence mode's bar, drawn from
// derive(state) (attention/derive.js). The chapters `steps` and `masks` show it through their
// ctx (`ctx.attention.mount()` → { update, dispose }); it changes the state only through the
// store's actions (focus, hover, a guess).
//
//   new AttentionView(store, { sentence, makeScene })
//   mount()        show it (the chapter's own 3D stage steps aside); returns { update, dispose }
//   update()       draw the state as it is now (the page calls it after every change)
//   dispose()      hide it again
//   reframe()      fit the 3D camera to what it draws (on resize, entering the projector view)
//   now            the derived view last drawn (derive(state)), or null

import { BlockTable } from "../blocktable.js";
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { renderInspect } from "../inspect.js";
import { MatrixTable } from "../table.js";
import { renderArithmetic } from "./arithpanel.js";
import { renderComparison } from "./compare.js";
import { derive, PHONE_MEDIA } from "./derive.js";
import { renderBanner, renderEditorNote, renderSceneNote, renderWithheld } from "./notes.js";
import { PredictBox } from "./predictbox.js";

const $ = (id) => document.getElementById(id);

export class AttentionView {
  /**
   * `sentence`: sentence.js SentenceParts; `editor`: editor.js Editor (its messages); `makeScene(container, handlers)`: a SceneView, or
   * null without WebGL; `mounted()`: on every mount, before the 3D view is made (the page starts its source the first time).
   */
  constructor(store, { sentence, editor, makeScene, mounted = () => {} }) {
    this.editor = editor;
    this.mountedHook = mounted;
    this.store = store;
    this.act = store.act;
    this.sentence = sentence;
    this.makeScene = makeScene;
    this.mounted = false;
    this.now = null;
    this.sourceKey = null; // the source whose note the editor shows
    this.table = new MatrixTable($("matrix"), {
      focus: (row) => this.focusRow(row),
      hover: (cell) => this.act.setHover(cell),
    });
    // a long sentence's table (lod.js): in blocks, or a window of words; the bar switches between them
    this.blocks = new BlockTable($("matrix"), { focus: (i) => this.focusRow(i), open: (b) => this.openKeys(b) });
    this.lodBar = this.makeLodBar();
    this.predict = new PredictBox(store.act, () => this.now?.question ?? null);
    this.scene = null;
    $("reset-view").addEventListener("click", () => this.reframe());
    // a phone's screen (the width app.css lays out as one): the 3D view draws fewer words at once
    const phone = window.matchMedia(PHONE_MEDIA);
    this.act.setNarrow(phone.matches);
    phone.addEventListener("change", (e) => this.act.setNarrow(e.matches));
  }

  /** Focus row `row` of the table as shown (a merged word: its first piece). */
  focusRow(row) {
    const groups = this.now?.groups;
    if (!this.mounted || !groups || row < 0 || row >= groups.length) return;
    this.act.setFocus(groups[row][0]);
  }

  /** The bar over a long sentence's table: the whole table in blocks, or the words around the focus. */
  makeLodBar() {
    const bar = el("div", { className: "lod-bar", role: "group", dataset: { testid: "lod-bar" }, hidden: true });
    const button = (mode, testid) => {
      const btn = el("button", { type: "button", dataset: { testid, mode } });
      btn.addEventListener("click", () => this.act.lodTable(mode));
      return btn;
    };
    bar.append(button("blocks", "lod-blocks"), button("tokens", "lod-tokens"));
    $("matrix").closest(".table-wrap").before(bar);
    return bar;
  }

  /** Open key block `b` of a long sentence beside the focused query's rows (its own block: the rows' window). */
  openKeys(b) {
    const edges = this.lodDrawn?.edges;
    if (!this.mounted || !edges) return;
    const focus = this.store.state.focus; // as the table's click left it (a cell focuses its row first)
    const own = (edges[b] <= focus && focus < edges[b + 1]) || edges[b] > focus; // its own block, or a later one: the rows' own keys
    this.act.lodTable("tokens", own ? null : edges[b]);
  }

  renderLodBar(v) {
    const bar = this.lodBar;
    bar.hidden = !v.long;
    if (!v.long) return;
    const mode = v.table.lod.mode;
    bar.setAttribute("aria-label", t("lod.bar"));
    for (const btn of bar.querySelectorAll("button")) {
      btn.textContent = btn.dataset.mode === "blocks" ? t("lod.showBlocks") : t("lod.showTokens", { token: v.shown.tokens[v.focus] });
      btn.setAttribute("aria-pressed", String(btn.dataset.mode === mode));
    }
  }

  /** A word of the 3D view's window (`i` counts from the window's first row). */
  focusSceneWord(i) {
    this.focusRow(i + (this.now?.sceneOffset ?? 0));
  }

  mount() {
    const app = $("app");
    app.dataset.layout = "attention";
    $("chapter-view").hidden = true;
    this.mounted = true;
    this.mountedHook(); // the first source's requests leave before the 3D view (a WebGL context) is set up
    this.scene ??= this.makeScene($("scene"), {
      focus: (i) => this.focusSceneWord(i),
      hover: (i) => this.act.setHoverToken(i === null ? null : i + (this.now?.sceneOffset ?? 0)),
    });
    this.update();
    // a step with `compare: true` (masks/difference) brings the side-by-side tables up beside the view
    const update = (answer, stepId, step) => {
      this.placeCompare(Boolean(step?.compare));
      this.update();
    };
    return { update, dispose: () => this.dispose(), explain: { title: $("step-title"), text: $("step-text") } };
  }

  /** The comparison of the masks: beside the view, under the step's words (`up`), or below the page's fold. */
  placeCompare(up) {
    const section = $("compare");
    const home = $("compare-home");
    const target = up ? $("explain") : home;
    if (section.previousElementSibling !== target) target.after(section);
    section.classList.toggle("compare-up", up);
    $("workspace").classList.toggle("comparing", up);
  }

  dispose() {
    this.placeCompare(false);
    this.mounted = false;
    $("app").dataset.layout = "chapter";
    $("chapter-view").hidden = false;
  }

  reframe() {
    this.scene?.resetView();
  }

  /** Draw the state as it is now. */
  update() {
    if (!this.mounted) return;
    const state = this.store.state;
    const v = derive(state);
    const previous = this.now;
    this.now = v;
    const key = `${state.example}|${state.sentence}|${state.edited}`;
    if (key !== this.sourceKey) {
      this.sourceKey = key;
      renderEditorNote(state);
    }
    // while a new answer is on its way the layout stays as it is (toggling it resizes the 3D view
    // twice per sentence: a fit and a WebGL frame each)
    const waiting = !v.data && state.sentence && !state.errors.length; // a sentence whose answer is on its way
    if (!waiting) $("workspace").classList.toggle("wide", Boolean(v.wide));
    for (const btn of [$("mask-full"), $("mask-causal")]) {
      btn.setAttribute("aria-pressed", String(btn.dataset.mask === state.mask));
      btn.disabled = Boolean(v.masks?.[btn.dataset.mask]);
    }
    renderBanner(state, v.data);
    this.editor.showErrors(state.errors);
    renderWithheld(v.withheld);
    this.sentence.renderBar(v.data, Boolean(v.merged), Boolean(v.withheld));
    if (!v.shown) {
      $("predict-box").hidden = true;
      return;
    }
    this.predict.update(v, state.predict);
    const hoverOnly =
      previous?.shown && previous.data === v.data && previous.merged === v.merged && previous.shownStep === v.shownStep &&
      previous.focusRow === v.focusRow && Boolean(previous.withheld) === Boolean(v.withheld) && previous.question?.id === v.question?.id &&
      previous.table?.lod?.mode === v.table?.lod?.mode && previous.table?.lod?.keys === v.table?.lod?.keys;
    this.renderLodBar(v);
    if (hoverOnly && previous.hover !== v.hover) {
      this.table.highlight(v.hover);
    } else {
      const table = $("matrix");
      this.lodDrawn = v.table.lod ?? null;
      if (v.table.lod?.mode === "blocks") this.blocks.update(v.table.lod, Boolean(v.withheld));
      else {
        table.dataset.lod = v.long ? "tokens" : "";
        table.classList.remove("blocks");
        this.table.update({ focus: v.table.focus, hover: v.table.hover }, v.table.data, v.table.step, v.table.window);
      }
      renderArithmetic(v.arithmetic);
      renderComparison($("compare-tables"), v, state.sentence, v.focus);
      renderSceneNote(v);
    }
    if (this.scene) {
      this.scene.update(v.scene, !hoverOnly);
      $("scene").dataset.withheld = String(Boolean(v.withheld));
    }
    const box = $("vector-info");
    box.hidden = !v.inspect;
    if (v.inspect) renderInspect(box, v.data, v.inspect);
  }
}
