// Where the attention view's numbers come from, and the requests that fetch them: a built-in
// example (editable Q, K, V), hand-set numbers, or a typed sentence run by the real model.
// This is the attention view's effect: it asks the server and tells the store what came back
// (actions.js); it keeps only its requests in flight and a timer, never what the page shows.

import { getExample, modelInfo, pageExample, Recomputer, sentenceBothMasks, sentenceCausal, sentenceRows, unreachable } from "../api.js";
import { OPENING_WORD } from "../actions.js";
import { has, t } from "../i18n.js";
import { ANIMAL, asInfo, isCausal } from "../model.js";
import { current, createState, readUrl } from "../state.js";
import { isLong, missingRows, rowWindow } from "../lod.js";

/** What the page can refuse before asking the server: cells that are not numbers, unnamed words. */
export function typingErrors(input) {
  const errors = [];
  input.tokens.forEach((word, i) => {
    if (String(word).trim() === "") errors.push({ field: "tokens", msg: t("editor.error.unnamed", { i: i + 1 }) });
  });
  for (const m of ["q", "k", "v"]) {
    input[m].forEach((row, r) =>
      row.forEach((x, c) => {
        if (typeof x !== "number") {
          const cell = `${m}[${r}][${c}]`;
          errors.push({ field: m, msg: x === "" ? t("editor.error.empty", { cell }) : t("editor.error.notNumber", { cell, text: x }) });
        }
      }),
    );
  }
  return errors;
}

/**
 * The example with its words in the page's language where the catalog carries them word for word
 * (example.<id>.tokens, as many words as the example has: each keeps its row of numbers); else as is.
 */
export function inLanguage(ex) {
  const key = `example.${ex.id}.tokens`;
  if (!has(key)) return ex;
  const tokens = t(key).split(" ");
  return tokens.length === ex.tokens.length ? { ...ex, tokens } : ex;
}

export class Source {
  /**
   * @param store     the page's store (state + actions)
   * @param options   { defaultExample, examples (ids the page lists), heads (sentence.js SentenceParts),
   *                    newSource() after a new example, sentence or hand-set numbers (the editor is rebuilt) }
   */
  constructor(store, { defaultExample, examples, heads, newSource }) {
    this.store = store;
    this.act = store.act;
    this.defaultExample = defaultExample;
    this.examples = examples;
    this.heads = heads;
    this.newSource = newSource;
    this.started = false; // the first source has been asked for
    this.generation = 0; // counts the snapshots followed: a load begun before one keeps its focus and mask
    this.wanted = null; // the source asked for last ("e:ID", "s:TEXT", "n"): an older example that arrives late is dropped
    this.slowTimer = 0;
    const received = (outcome) => {
      clearTimeout(this.slowTimer);
      this.act.received(outcome);
    };
    this.recomputer = new Recomputer(received);
    this.modelRecomputer = new Recomputer(received, 0, sentenceBothMasks);
    this.laterFor = null; // the answer whose other mask is being fetched (fetchLater)
    this.rowsFor = null; // the long answer whose rows around the focus are being fetched (fetchRows)
  }

  /**
   * A built-in example; `wantWord`: the word to focus once loaded (undefined: keep the current
   * wish); `focus`: the row to start on (null: keep); `history`: a view to come back to.
   */
  async example(id, { keepMask = false, wantWord = undefined, focus = null, history = false } = {}) {
    this.started = true;
    const generation = this.generation;
    this.wanted = `e:${id}`;
    // the page's own example is there at once: its numbers are asked for in this same task (the
    // first view's requests leave before the 3D view is set up); any other is fetched
    let ex = this.examples.has(id) ? pageExample(id) : null;
    try {
      if (!this.examples.has(id)) throw new Error("unknown example");
      ex ??= await getExample(id);
    } catch {
      this.act.setNotice(t("notice.noExample", { id }));
      if (id !== this.defaultExample) return this.example(this.defaultExample, { keepMask, wantWord, focus, history });
      return;
    }
    if (this.wanted !== `e:${id}`) return; // another source was asked for meanwhile
    if (generation !== this.generation) {
      // a room's view (or Back) arrived while this example loaded: what it named wins
      keepMask = true;
      wantWord = undefined;
      focus = null;
    }
    const english = ex.tokens; // the server's words: the opening word is named by them
    ex = inLanguage(ex);
    if (wantWord && english.includes(wantWord)) wantWord = ex.tokens[english.indexOf(wantWord)];
    const notice = this.store.state.notice;
    this.heads.stopHeads();
    this.modelRecomputer.cancel();
    this.act.exampleLoaded(ex, { keepMask, wantWord, focus, history });
    if (notice) this.act.setNotice(notice); // "there is no example called …" stays said
    this.newSource();
    this.recompute(true);
  }

  /** Run the real model on a sentence; `fresh`: typed or clicked (not from a URL). */
  sentence(text, { fresh = false, history = false } = {}) {
    this.started = true;
    this.wanted = `s:${text}`;
    this.sentModel = this.store.state.modelId; // the model this sentence runs on (a room may switch it)
    this.recomputer.cancel();
    this.act.sentenceChosen(text, { fresh, history });
    this.newSource();
    this.heads.ensureModel();
    this.recompute(true);
    this.heads.fetchHeads();
  }

  /** Hand-set numbers (a link with q, k, v, or a room's view). */
  numbers(input, example) {
    this.started = true;
    this.wanted = "n";
    this.modelRecomputer.cancel();
    this.heads.stopHeads();
    this.act.numbersSet(input, example);
    this.newSource();
    this.recompute(true);
  }

  /** The editor changed the numbers. */
  edited(input, { removed = null } = {}) {
    this.act.inputEdited(input, { removed });
    this.recompute(false);
  }

  /** The attention view's first source, from the URL (`params`) or the default example. */
  start(params) {
    const state = this.store.state;
    this.started = true;
    if (state.input) return this.numbers(state.input, state.example);
    if (state.sentence) {
      if (!params.has("layer") && !params.has("head") && state.sentence.trim() === ANIMAL) this.act.animalView({ word: !params.has("focus") });
      else if (!params.has("focus")) this.act.setFocus(1);
      document.getElementById("sentence-input").value = state.sentence;
      return this.sentence(state.sentence);
    }
    const id = state.example || this.defaultExample;
    return this.example(id, { keepMask: params.has("mask") || state.chapter !== "steps", wantWord: params.has("focus") ? null : (OPENING_WORD[id] ?? null) });
  }

  /**
   * After a room snapshot (or Back/Forward) was applied to the state: load the source it names,
   * when it is not the one shown. `before`: the layer and head before it was applied.
   */
  follow(snap, before) {
    this.generation += 1;
    const next = createState(this.defaultExample);
    readUrl(next, typeof snap === "string" ? snap : new URLSearchParams(snap).toString());
    const state = this.store.state;
    if (next.input) return this.numbers(next.input, next.example);
    if (next.sentence) {
      if (next.modelId !== state.modelId) this.act.modelChosen(next.modelId, modelEntry(state, next.modelId), next);
      if (next.sentence !== state.sentence || next.modelId !== this.sentModel || !this.started) return this.sentence(next.sentence);
      if (before.layer !== state.layer || before.head !== state.head) this.recompute(true);
      return;
    }
    const id = next.example ?? this.defaultExample;
    if (this.wanted === `e:${id}` && !state.edited) return; // shown, or on its way (it keeps what the snapshot named)
    return this.example(id, { keepMask: true, wantWord: null });
  }

  /** Ask the server again for what the state names (a sentence's layer and head, or the numbers). */
  recompute(immediate = false) {
    const state = this.store.state;
    if (state.sentence) {
      this.act.asked();
      this.modelRecomputer.schedule(this.modelRequest(), immediate);
      clearTimeout(this.slowTimer);
      this.slowTimer = setTimeout(() => this.act.slowAnswer(), 400); // "Running the model…" only when it takes a while
      return;
    }
    if (!state.input) return;
    const errors = typingErrors(state.input);
    if (errors.length) {
      this.recomputer.cancel();
      this.act.refused(errors);
      return;
    }
    this.act.asked();
    this.recomputer.schedule(state.input, immediate);
  }

  /** What sentenceBothMasks (model.js) is asked for the state as it is. */
  modelRequest() {
    const state = this.store.state;
    const causal = state.model || !state.modelId ? isCausal(state.model) : null;
    return { sentence: state.sentence, layer: state.layer, head: state.head, mask: state.mask, kind: state.model?.kind ?? "bert", model: state.modelId, causal };
  }

  /** After every change of a sentence's view: its overview (sentence.js fetchHeads), a mask left for later, a long one's rows. */
  afterChange() {
    this.heads.fetchHeads();
    this.fetchLater();
    this.fetchRows();
  }

  /**
   * A long sentence (lod.js) has the rows it was asked for: when the focus moves past them, ask for
   * those of the window around it that it lacks, one request at a time (when it comes, the store
   * changes and this runs again for wherever the focus is then).
   */
  fetchRows() {
    const state = this.store.state;
    const result = state.result;
    const data = current(state);
    if (!isLong(data) || this.rowsFor === result) return;
    const { from, to } = rowWindow(data.tokens.length, state.focus);
    const missing = missingRows(data, from, to);
    if (!missing.length) return;
    this.rowsFor = result;
    sentenceRows(this.modelRequest(), missing)
      .catch(unreachable)
      .then((outcome) => {
        if (this.rowsFor === result && outcome.ok) this.rowsFor = null; // a refusal is not asked again for this answer
        this.act.rowsReceived(result, outcome);
      });
  }

  /**
   * When the page shows a mask its answer left for later (a long sentence's
   * causal mask: model.js sentenceBothMasks), ask for it once; the store takes it (laterReceived)
   * if that answer is still the one shown.
   */
  fetchLater() {
    const state = this.store.state;
    const result = state.result;
    if (!state.sentence || !result?.later || result.later !== state.mask || this.laterFor === result) return;
    this.laterFor = result;
    sentenceCausal(this.modelRequest(), result.full)
      .catch(unreachable)
      .then((outcome) => {
        if (this.laterFor === result) this.laterFor = null;
        this.act.laterReceived(result, outcome);
      });
  }

  /** Start loading the model's weights while the user types a sentence. */
  warmModel() {
    const model = this.store.state.model;
    if (model && !model.loaded && !model.loading) modelInfo(true, undefined, this.store.state.modelId).catch(() => {});
  }
}

/** The facts of model `id` from the picker's list (null: not listed yet, or the server's own). */
export function modelEntry(state, id) {
  const entry = id ? state.models?.find((m) => m.id === id) : state.models?.find((m) => m.default);
  return entry ? asInfo(entry) : null;
}
