// The grid editor: every token name and every number of Q, K and V is an input.
// It never changes the state: each edit makes new numbers (a copy of state.input with the
// change) and hands them to `changed`, which runs the store's action; the server then recomputes.
// Errors (the server's, and the typing checks of attention/source.js) are shown next to the matrix they name,
// with the cell named as the editor shows it (Q, row "its", column 1); a number too large for
// a float and a d_k or d_v out of range the editor says itself, at once.

import { MAX_DIM, MAX_TOKENS, parseCell } from "./state.js";
import { el } from "./dom.js";
import { t as say } from "./i18n.js";

// each matrix's grid: its caption is a catalog key (i18n.js)
const MATRICES = [
  { id: "q", title: "editor.matrix.q", dim: "d_k" },
  { id: "k", title: "editor.matrix.k", dim: "d_k" },
  { id: "v", title: "editor.matrix.v", dim: "d_v" },
];

/** A copy of the numbers that an edit may change. */
function copyInput(input) {
  return { tokens: [...input.tokens], q: input.q.map((r) => [...r]), k: input.k.map((r) => [...r]), v: input.v.map((r) => [...r]) };
}

function resizeRows(rows, d) {
  return rows.map((row) => Array.from({ length: d }, (_, i) => (i < row.length ? row[i] : 0)));
}

export class Editor {
  /**
   * @param root      the container of the grids
   * @param dims      { dk, dv, add } inputs and button from the page
   * @param state     the page state (read only: its `input` is what the grids show)
   * @param changed   callback(input, { structural, removed }) with the edited numbers
   */
  constructor(root, dims, state, changed) {
    this.root = root;
    this.dims = dims;
    this.state = state;
    this.changed = changed;
    this.errorSlots = {};
    this.serverErrors = [];
    this.localErrors = new Map(); // "q 3 0": a message about a cell the editor found itself
    // d_k and d_v's own message, beside their boxes
    this.dimsError = el("p", { className: "field-error", "aria-live": "polite", dataset: { testid: "error-dims" } });
    this.dimsError.hidden = true;
    dims.add.after(this.dimsError);

    root.addEventListener("input", (e) => this.onInput(e));
    root.addEventListener("click", (e) => {
      const btn = e.target.closest("button[data-remove]");
      if (btn) this.removeToken(Number(btn.dataset.remove));
    });
    // d_k and d_v apply as they are typed, like every other box
    dims.dk.addEventListener("input", () => this.resize("dk"));
    dims.dv.addEventListener("input", () => this.resize("dv"));
    dims.add.addEventListener("click", () => this.addToken());
  }

  onInput(e) {
    const t = e.target;
    if (!this.state.input || !t.dataset) return;
    const input = copyInput(this.state.input);
    if (t.dataset.token !== undefined) {
      // (an empty name is refused by attention/source.js typingErrors, which keeps the last good drawing)
      const i = Number(t.dataset.token);
      input.tokens[i] = t.value;
      for (const label of this.root.querySelectorAll(`[data-row-label="${i}"]`)) label.textContent = t.value;
    } else if (t.dataset.matrix) {
      const { matrix, row, col } = t.dataset;
      const where = `${matrix} ${row} ${col}`;
      const x = parseCell(t.value);
      if (typeof x === "number" && !Number.isFinite(x)) {
        this.localErrors.set(where, say("editor.error.tooLarge", { cell: this.cellName(matrix, Number(row), Number(col)), text: t.value.trim() }));
        this.showErrors(this.serverErrors);
        return;
      }
      this.localErrors.delete(where);
      input[matrix][Number(row)][Number(col)] = x;
    } else {
      return;
    }
    this.changed(input, { structural: false });
  }

  /** A cell as the editor shows it: the matrix, the row's word (and number), the column from 1. */
  cellName(matrix, row, col) {
    const word = this.state.input?.tokens[row];
    return say("editor.cell", { matrix: matrix.toUpperCase(), named: String(word !== undefined), word: word ?? "", row: row + 1, col: col + 1 });
  }

  /** The server's message with its 0-based place (`q[3][0]: …`) named as the editor shows it. */
  translate(msg) {
    const at = /^([qkv])\[(\d+)\]\[(\d+)\]: (.*)$/s.exec(msg);
    if (!at) return msg;
    const [, m, r, c, rest] = at;
    const box = this.root.querySelector(`input[data-matrix="${m}"][data-row="${r}"][data-col="${c}"]`);
    const typed = box ? box.value.trim() : "";
    let why = rest;
    const cell = this.cellName(m, Number(r), Number(c));
    if (/valid number|finite number/i.test(rest)) return typed === "" ? say("editor.error.empty", { cell }) : say("editor.error.notNumber", { cell, text: typed });
    return `${cell}: ${why}`;
  }

  resize(which) {
    if (!this.state.input) return;
    const input = copyInput(this.state.input);
    const box = which === "dk" ? this.dims.dk : this.dims.dv;
    const name = which === "dk" ? "d_k" : "d_v";
    const now = which === "dk" ? input.q[0].length : input.v[0].length;
    const text = box.value.trim();
    const d = Number(text);
    if (text === "" || !Number.isInteger(d) || d < 1 || d > MAX_DIM) {
      // said, not silently undone: the box keeps what was typed until it is a length the page can draw
      box.setAttribute("aria-invalid", "true");
      this.dimsError.textContent = say("editor.error.dims", { name, max: MAX_DIM, text, typed: String(text !== ""), now });
      this.dimsError.hidden = false;
      return;
    }
    box.removeAttribute("aria-invalid");
    this.dimsError.hidden = true;
    this.dimsError.textContent = "";
    if (d === now) return;
    if (which === "dk") {
      input.q = resizeRows(input.q, d);
      input.k = resizeRows(input.k, d);
    } else {
      input.v = resizeRows(input.v, d);
    }
    this.changed(input, { structural: true });
  }

  addToken() {
    if (!this.state.input || this.state.input.tokens.length >= MAX_TOKENS) return;
    const input = copyInput(this.state.input);
    input.tokens.push(say("editor.newWord", { n: input.tokens.length + 1 }));
    for (const m of ["q", "k", "v"]) input[m].push(input[m][0].map(() => 0));
    this.changed(input, { structural: true });
  }

  removeToken(i) {
    if (!this.state.input || this.state.input.tokens.length <= 1) return;
    const input = copyInput(this.state.input);
    for (const m of ["tokens", "q", "k", "v"]) input[m].splice(i, 1);
    this.localErrors.clear(); // their places have moved
    this.changed(input, { structural: true, removed: i });
    // the grid was drawn anew: the keyboard focus goes to the next word's ✕ (or the last one),
    // or, with one word left, to that word's box, instead of falling to the page
    const n = input.tokens.length;
    const next = this.root.querySelector(`button[data-remove="${Math.min(i, n - 1)}"]`);
    (next && !next.disabled ? next : this.root.querySelector(`input[data-token="${Math.min(i, n - 1)}"]`))?.focus();
  }

  /** Rebuild every grid from state.input (after a structural change or a new source). */
  build() {
    const input = this.state.input;
    this.root.replaceChildren();
    this.errorSlots = {};
    if (!input) return;
    this.localErrors.clear();
    for (const box of [this.dims.dk, this.dims.dv]) box.removeAttribute("aria-invalid");
    this.dimsError.hidden = true;
    const n = input.tokens.length;
    this.dims.dk.value = String(input.q[0].length);
    this.dims.dv.value = String(input.v[0].length);
    this.dims.add.disabled = n >= MAX_TOKENS;

    // the words
    const words = el("div", { className: "grid-block" });
    const wt = el("table", { className: "grid", dataset: { testid: "edit-tokens" } });
    wt.append(el("caption", {}, say("editor.words")));
    const wbody = el("tbody");
    input.tokens.forEach((t, i) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, String(i + 1)));
      const td = el("td");
      const box = el("input", {
        type: "text",
        maxlength: "100",
        spellcheck: "false",
        "aria-label": say("editor.word", { i: i + 1 }),
        dataset: { token: String(i), testid: `edit-token-${i}` },
      });
      box.value = t;
      td.append(box);
      const rm = el("td");
      const btn = el(
        "button",
        { type: "button", className: "remove", "aria-label": say("editor.remove", { i: i + 1 }), dataset: { remove: String(i) } },
        "✕",
      );
      btn.disabled = n <= 1;
      rm.append(btn);
      tr.append(td, rm);
      wbody.append(tr);
    });
    wt.append(wbody);
    words.append(wt, this.errorSlot("tokens"));
    this.root.append(words);

    for (const m of MATRICES) {
      const rows = input[m.id];
      const d = rows[0].length;
      const block = el("div", { className: `grid-block grid-${m.id}` });
      const table = el("table", { className: "grid", dataset: { testid: `edit-${m.id}` } });
      table.append(el("caption", {}, say(m.title)));
      const head = el("tr");
      head.append(el("td"));
      for (let c = 0; c < d; c++) head.append(el("th", { scope: "col" }, String(c + 1)));
      const thead = el("thead");
      thead.append(head);
      const tbody = el("tbody");
      rows.forEach((row, r) => {
        const tr = el("tr");
        tr.append(el("th", { scope: "row", dataset: { rowLabel: String(r) } }, input.tokens[r]));
        row.forEach((x, c) => {
          const td = el("td");
          const box = el("input", {
            type: "text",
            inputmode: "decimal",
            size: "5",
            "aria-label": say("editor.coordinate", { matrix: m.id.toUpperCase(), row: r + 1, col: c + 1 }),
            dataset: { matrix: m.id, row: String(r), col: String(c), testid: `edit-${m.id}-${r}-${c}` },
          });
          box.value = String(x);
          td.append(box);
          tr.append(td);
        });
        tbody.append(tr);
      });
      table.append(thead, tbody);
      block.append(table, this.errorSlot(m.id));
      this.root.append(block);
    }
    const other = this.errorSlot("body");
    this.root.append(other);
  }

  errorSlot(field) {
    const p = el("p", { className: "field-error", "aria-live": "polite", dataset: { testid: `error-${field}` } });
    p.hidden = true;
    this.errorSlots[field] = p;
    return p;
  }

  /** Show the server's error messages next to the matrix they name; mark the cell if named. */
  showErrors(errors) {
    this.serverErrors = errors;
    for (const slot of Object.values(this.errorSlots)) {
      slot.hidden = true;
      slot.textContent = "";
    }
    for (const box of this.root.querySelectorAll("[aria-invalid]")) box.removeAttribute("aria-invalid");
    const local = [...this.localErrors].map(([where, msg]) => {
      const [m, r, c] = where.split(" ");
      return { field: m, msg, cell: [m, r, c] };
    });
    for (const err of [...local, ...errors]) {
      const slot = this.errorSlots[err.field] ?? this.errorSlots.body;
      if (!slot) continue;
      const msg = err.cell ? err.msg : this.translate(err.msg);
      slot.hidden = false;
      slot.textContent = slot.textContent ? `${slot.textContent} ${msg}` : msg;
      const at = err.cell ?? /^([qkv])\[(\d+)\]\[(\d+)\]/.exec(err.msg)?.slice(1);
      if (at) {
        const box = this.root.querySelector(`input[data-matrix="${at[0]}"][data-row="${at[1]}"][data-col="${at[2]}"]`);
        box?.setAttribute("aria-invalid", "true");
      }
    }
  }
}
