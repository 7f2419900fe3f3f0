// Sentence mode's page parts: the model's loading state, the layer and head pickers, the
// model bar's notes, and the overview of every head (fetched once per sentence and mask).
// It reads the state and changes it only through the store's actions (modelKnown,
// modelLoading, headsState); picking a head goes through `pick(layer, head, from)`.

import { allHeads, listModels, modelInfo } from "./api.js";
import { andList, integer, t } from "./i18n.js";
import { isCausal, kvGroups, parsePick } from "./model.js";
import { HeadsOff } from "./inside/headsoff.js";
import { Overview } from "./overview.js";
import { isLong } from "./lod.js";
import { current } from "./state.js";

const $ = (id) => document.getElementById(id);

/** Resolves once the next frame has been drawn (or after 200 ms: a hidden tab draws no frames). */
function afterNextFrame() {
  return new Promise((resolve) => {
    const late = setTimeout(resolve, 200);
    requestAnimationFrame(() =>
      setTimeout(() => {
        clearTimeout(late);
        resolve();
      }, 0),
    );
  });
}

export class SentenceParts {
  /** `known`: the page's first GET /api/model (a promise), awaited before saying the model loads. */
  constructor(store, { pick, known = null, choose = () => {} }) {
    const state = store.state;
    this.state = state;
    this.act = store.act;
    this.known = known;
    this.headsController = null;
    this.modelWatch = null; // the poll in progress, if any
    // a click on a head picks it, or (while heads are being switched off: inside/headsoff.js) switches it off or on
    this.headsOff = new HeadsOff(store, $("heads-off"));
    const onHead = (layer, head) => {
      if (this.headsOff.switching && Number.isInteger(layer) && Number.isInteger(head)) this.act.toggleHeadOff(layer, head);
      else pick(layer, head, "overview");
    };
    this.overview = new Overview($("overview-grid"), $("overview-status"), onHead);
    this.built = null; // "layers×heads×kv" of the pickers as built
    this.buildPickers(6, 12);
    $("layer-select").addEventListener("change", (e) => pick(parsePick(e.target.value), state.head));
    $("head-select").addEventListener("change", (e) => pick(state.layer, parsePick(e.target.value)));
    $("model-select").addEventListener("change", (e) => choose(e.target.value));
    listModels()
      .then((models) => {
        this.act.modelsListed(models);
        this.showModels(models);
      })
      .catch((err) => console.warn("model list unavailable:", err));
  }

  /**
   * The layer and head pickers for a model of `layers` × `heads`; with grouped-query attention
   * (`kvHeads` < heads) the heads come in one group per key/value head they share ("KV head 0:
   * heads 0–2", …), each option saying its group.
   */
  buildPickers(layers, heads, kvHeads = heads) {
    const key = `${layers}×${heads}×${kvHeads}`;
    if (this.built === key) return;
    this.built = key;
    const options = (count) => Array.from({ length: count }, (_, i) => new Option(integer(i), String(i)));
    const mean = () => new Option(t("model.mean"), "mean");
    $("layer-select").replaceChildren(...options(layers), mean());
    const groups = kvGroups(heads, kvHeads);
    const head = $("head-select");
    if (groups.length === heads) head.replaceChildren(...options(heads), mean());
    else {
      const parts = groups.map((members, g) => {
        const group = document.createElement("optgroup");
        group.label = t("model.kvGroup", { g, first: members[0], last: members[members.length - 1] });
        group.dataset.kv = String(g);
        group.append(...members.map((h) => new Option(t("model.kvHead", { h, g }), String(h))));
        return group;
      });
      head.replaceChildren(...parts, mean());
    }
    head.dataset.kvHeads = String(groups.length);
  }

  /** The model picker's options: GET /api/models' entries (the server's own first). */
  showModels(models) {
    const select = $("model-select");
    select.replaceChildren(...models.map((m) => new Option(m.name, m.id)));
    select.closest("label").hidden = models.length < 2;
  }

  /** Ask for the model's weights (in the background) and poll until they are loaded. */
  ensureModel() {
    if (this.state.model?.loaded) return Promise.resolve();
    this.modelWatch ??= this.watchModel().finally(() => {
      this.modelWatch = null;
    });
    return this.modelWatch;
  }

  async watchModel() {
    const state = this.state;
    await this.known?.catch(() => null); // the page's first look at the model (GET /api/model)
    if (state.model && !state.model.loaded) {
      // not loaded: say so now (on a busy machine the sentence's own request may load it
      // before the status below answers)
      this.act.modelLoading(true);
    }
    try {
      this.act.modelKnown(await modelInfo(true, undefined, state.modelId));
      // a load that failed leaves loaded and loading false: stop, the sentence's own request says why
      while (!state.model.loaded && state.model.loading) {
        this.act.modelLoading(true);
        await new Promise((r) => setTimeout(r, 300));
        this.act.modelKnown(await modelInfo(false, undefined, state.modelId));
      }
    } catch (err) {
      console.warn("model status unavailable:", err);
    }
    this.act.modelLoading(false);
  }

  /** The overview of every head for the sentence and mask (fetched once per pair, after the view's answer). */
  async fetchHeads() {
    const state = this.state;
    if (!state.sentence) return;
    const mask = isCausal(state.model) ? "causal" : state.mask;
    const key = `${state.modelId ?? ""}|${mask}|${state.sentence}`;
    if (state.heads?.key === key) return;
    // a new sentence's view comes first: the server runs the layers the view needs, answers, and
    // then the rest for the overview (asked together, the overview's whole forward went first)
    if (!state.result && !state.errors.length) return;
    const shown = state.result && current(state);
    if (isLong(shown)) {
      // a long sentence (lod.js): the overview reads every layer's every head whole, up to full_tokens
      this.headsController?.abort();
      const limit = state.model?.full_tokens ?? state.model?.max_tokens ?? 512;
      this.act.headsState({ key, error: t("overview.long", { n: integer(shown.tokens.length), limit: integer(limit) }) });
      return;
    }
    this.headsController?.abort();
    const controller = new AbortController();
    this.headsController = controller;
    this.act.headsState({ key, pending: true });
    // asked for once the view's first frame is drawn: the server's forward through every layer
    // would otherwise share the machine's cores with the browser drawing that frame
    await afterNextFrame();
    if (controller.signal.aborted || state.heads?.key !== key) return;
    let outcome;
    try {
      outcome = await allHeads(state.sentence, mask, controller.signal, state.modelId);
    } catch (err) {
      if (controller.signal.aborted) return;
      outcome = { ok: false, errors: [{ msg: t("error.unreachable", { reason: err.message }) }] };
    }
    if (state.heads?.key !== key) return;
    this.act.headsState(outcome.ok ? { key, data: outcome.data } : { key, error: outcome.errors.map((e) => e.msg).join(" ") });
  }

  stopHeads() {
    this.headsController?.abort();
    if (this.state.heads) this.act.headsState(null);
  }

  /**
   * The model bar (name, pickers, status, notes) and the overview, for the data shown;
   * `withheld`: the weights are held back, so the overview (every head's weights) is too.
   */
  renderBar(data, mergedNow, withheld = false) {
    const state = this.state;
    const on = Boolean(state.sentence);
    const slow = state.slow;
    $("model-bar").hidden = !on;
    $("overview").hidden = !on || withheld;
    if (!on) return;
    const m = state.model;
    if (m) {
      const shared = m.kv_heads && m.kv_heads < m.heads ? m.kv_heads : 0;
      $("model-name").textContent = t("model.name", { name: m.name, layers: m.layers, heads: m.heads, shared, dk: m.head_size });
      this.buildPickers(m.layers, m.heads, m.kv_heads ?? m.heads);
    }
    $("model-select").value = state.modelId ?? state.models?.find((x) => x.default)?.id ?? "";
    $("layer-select").value = String(state.layer);
    $("head-select").value = String(state.head);
    $("merge-toggle").checked = state.merge;
    const status = $("model-status");
    const text = state.modelLoading
      ? t("model.loading", { name: state.model?.name ?? "all-MiniLM-L6-v2" })
      : state.pending && slow
        ? t("model.running")
        : "";
    status.textContent = text;
    status.hidden = !text;
    status.classList.toggle("loading", state.modelLoading);
    $("model-note").textContent = this.notes(data, mergedNow).join(" ");

    const heads = state.heads;
    if (heads?.data) {
      this.overview.show(heads.data, m?.kv_heads ?? heads.data.heads);
      this.overview.highlight(state.layer, state.head);
      this.overview.markOff(state.off);
      this.overview.message("");
    } else {
      this.overview.clear();
      this.overview.message(heads?.error ? t("overview.unavailable", { error: heads.error }) : t("overview.loading"));
    }
  }

  notes(data, mergedNow) {
    const state = this.state;
    const notes = [];
    const hasPieces = data && data.tokens.some((token) => token.startsWith("##"));
    if (data) notes.push(t("model.note.showing", { pick: pickText(data.layer, data.head) }));
    if (state.merge && !mergedNow) notes.push(t("model.note.mergeLater"));
    else if (mergedNow) notes.push(t("model.note.merged"));
    else if (hasPieces) notes.push(t("model.note.pieces"));
    if (data?.mean_over?.length) notes.push(t("model.note.mean", { over: andList(data.mean_over.map((name) => t("arith.over", { name }))) }));
    if (state.mask === "causal" && !isCausal(state.model)) notes.push(t("model.note.causal"));
    return notes;
  }
}

/** "layer 3, head 1", "the mean of layer 3's heads", … in the page's language, for the model bar's note. */
function pickText(layer, head) {
  const which = layer === "mean" ? (head === "mean" ? "all" : "layers") : head === "mean" ? "heads" : "one";
  return t("model.pick", { which, layer: String(layer), head: String(head) });
}
