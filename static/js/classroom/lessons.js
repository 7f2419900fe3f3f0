// Lessons: record views with a note each, save them (on the server), replay them with the clicker
// (PageDown / PageUp go from view to view), export and import them as JSON files; edit, reorder and
// delete them; print a handout of one; save one as a single .html file that works offline.
// Every call carries the teacher token: lessons are the teacher's (students get views through a room).

import { call } from "../api.js";
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { applyViewState, viewState } from "../pageview.js";
import { keepDraft, readDraft } from "./draft.js";
import { LessonEditor } from "./lesson-editor.js";
import { buildHandout, showHandout } from "./lesson-handout.js";
import { offlineLesson } from "./lesson-offline.js";
import { teacherToken, viewOnly } from "./session.js";

/** A line of the Lessons menu (classroom.lessons.…): its words are in the catalogs, read when drawn. */
const say = (key, values) => t(`classroom.lessons.${key}`, values);
const quote = (text) => t("format.quote", { text });

export class Lessons {
  constructor(bar) {
    this.recording = null; // { title, views: [{ state, note }] } while recording
    this.playing = null; // { lesson, index }
    const details = el("details", { className: "cr-lessons", dataset: { testid: "lessons" } });
    details.append(el("summary", {}, say("summary")));
    const panel = el("div", { className: "cr-lessons-panel" });
    this.list = el("select", { "aria-label": say("saved"), dataset: { testid: "lesson-select" } });
    const play = this.button(say("play"), "lesson-play", () => this.play());
    const exportButton = this.button(say("export"), "lesson-export", () => this.exportSelected());
    const remove = this.button(say("delete"), "lesson-delete", () => this.remove());
    const edit = this.button(say("edit"), "lesson-edit", () => this.edit());
    const up = this.button("↑", "lesson-move-up", () => this.move(-1), say("up"));
    const down = this.button("↓", "lesson-move-down", () => this.move(1), say("down"));
    const handout = this.button(say("handout"), "lesson-handout-make", () => this.handout({ notes: false }), say("handoutTitle"));
    const notesHandout = this.button(say("withNotes"), "lesson-handout-notes", () => this.handout({ notes: true }), say("withNotesTitle"));
    const offline = this.button(say("offline"), "lesson-offline", () => this.offline(), say("offlineTitle"));
    const file = el("input", { type: "file", accept: "application/json,.json", dataset: { testid: "lesson-import" } });
    file.addEventListener("change", () => this.importFile(file));
    const importLabel = el("label", { className: "cr-import" }, `${say("import")} `);
    importLabel.append(file);
    this.note = el("input", {
      type: "text",
      placeholder: say("notePlaceholder"),
      "aria-label": say("noteLabel"),
      maxlength: "2000",
      dataset: { testid: "lesson-note" },
    });
    this.title = el("input", {
      type: "text",
      placeholder: say("titlePlaceholder"),
      "aria-label": say("titleLabel"),
      maxlength: "200",
      dataset: { testid: "lesson-title" },
    });
    const add = this.button(say("add"), "lesson-add", () => this.add());
    const save = this.button(say("save"), "lesson-save", () => this.save());
    this.discardButton = this.button(say("discard"), "lesson-discard", () => this.discard());
    this.status = el("p", { className: "cr-lessons-status", role: "status", dataset: { testid: "lesson-status" } });
    panel.append(
      el("p", { className: "cr-lessons-row" }),
      importLabel,
      el("h3", {}, say("record")),
      this.note,
      add,
      this.title,
      save,
      this.discardButton,
      this.status,
    );
    panel.firstChild.append(this.list, play, edit, up, down, remove);
    const tools = el("p", { className: "cr-lessons-row" });
    tools.append(handout, notesHandout, offline, exportButton);
    panel.firstChild.after(tools);
    this.editor = new LessonEditor(panel, {
      onSave: (lesson) => this.saveEdit(lesson),
      onReload: (id) => call("GET", `/api/lessons/${id}`, { secret: teacherToken() }).catch((e) => {
        this.say(e.message);
        throw e;
      }),
      onClose: () => {},
    });
    details.append(panel);
    details.addEventListener("toggle", () => details.open && this.refresh());
    this.playBar = el("div", { className: "cr-playing", dataset: { testid: "lesson-playing" } });
    this.playBar.hidden = true;
    bar.append(details);
    document.querySelector("#main")?.prepend(this.playBar);
    this.details = details;
    // a lesson recorded before a reload (or a closed tab) is still here, until it is saved or discarded
    this.recording = readDraft();
    if (this.recording) this.title.value = this.recording.title;
    this.title.addEventListener("input", () => this.keep());
    this.drawDraft();
  }

  /** Keep the recording in this browser (draft.js); say so when the browser refuses. */
  keep() {
    if (!this.recording) return;
    this.recording.title = this.title.value;
    if (!keepDraft(this.recording)) this.say(say("notKept"));
  }

  drawDraft() {
    const n = this.recording?.views.length ?? 0;
    this.discardButton.hidden = n === 0;
    this.details.dataset.draft = String(n);
    if (n) this.say(say("draft", { n }));
  }

  discard() {
    const n = this.recording?.views.length ?? 0;
    if (!n || !window.confirm(say("discardConfirm", { n }))) return;
    this.recording = null;
    keepDraft(null);
    this.title.value = "";
    this.drawDraft();
    this.say(say("discarded"));
  }

  button(text, testid, onClick, label = null) {
    const b = el("button", { type: "button", dataset: { testid }, ...(label ? { "aria-label": label, title: label } : {}) }, text);
    b.addEventListener("click", onClick);
    return b;
  }

  say(text) {
    this.status.textContent = text;
  }

  async refresh() {
    try {
      const lessons = await call("GET", "/api/lessons?limit=1000", { secret: teacherToken() });
      const keep = this.list.value;
      this.list.replaceChildren(
        ...lessons.map((l) => el("option", { value: String(l.id) }, say("option", { title: l.title, n: l.views }))),
      );
      if (keep) this.list.value = keep;
    } catch (e) {
      this.say(e.message);
    }
  }

  add() {
    this.recording ??= { title: this.title.value, views: [] };
    this.recording.views.push({ state: viewOnly(viewState()), note: this.note.value.trim() });
    this.note.value = "";
    this.keep();
    this.drawDraft();
  }

  async save() {
    if (!this.recording?.views.length) return this.say(say("recordFirst"));
    const title = this.title.value.trim() || "A lesson";
    try {
      const { id } = await call("POST", "/api/lessons", { body: { title, views: this.recording.views }, secret: teacherToken() });
      this.recording = null;
      keepDraft(null);
      this.drawDraft();
      this.title.value = "";
      await this.refresh();
      this.list.value = String(id);
      this.say(say("savedAs", { id }));
    } catch (e) {
      this.say(e.message);
    }
  }

  async selected() {
    if (!this.list.value) return null;
    return call("GET", `/api/lessons/${this.list.value}`, { secret: teacherToken() });
  }

  async play() {
    const lesson = await this.selected().catch((e) => this.say(e.message));
    if (!lesson) return;
    this.playing = { lesson, index: 0 };
    this.details.open = false;
    await this.show();
  }

  async step(delta) {
    if (!this.playing) return false;
    const next = this.playing.index + delta;
    if (next < 0 || next >= this.playing.lesson.views.length) return true;
    this.playing.index = next;
    await this.show();
    return true;
  }

  async show() {
    const { lesson, index } = this.playing;
    this.redraw();
    this.onShow?.({ lesson: lesson.id, title: lesson.title, index, count: lesson.views.length });
    await applyViewState(lesson.views[index].state);
  }

  /** The play bar: where the lesson is, and the view's note, except on the projector (a note may hold
   *  the answer: there it is only in the teacher's window, teacher.js). */
  redraw() {
    if (!this.playing) return;
    const { lesson, index } = this.playing;
    const view = lesson.views[index];
    const stop = this.button(say("stop"), "lesson-stop", () => this.stop());
    const parts = [el("strong", {}, `${lesson.title} · ${index + 1} / ${lesson.views.length}`)];
    const projector = document.body.classList.contains("cr-presenting");
    if (!projector && view.note) parts.push(el("span", { className: "cr-note", dataset: { testid: "lesson-view-note" } }, view.note));
    this.playBar.replaceChildren(...parts, stop);
    this.playBar.dataset.index = String(index);
    this.playBar.hidden = false;
    document.body.classList.add("cr-lesson-playing");
  }

  /** Another of the teacher's windows plays a lesson (the room's deck): step through it here too; the
   *  view itself comes through the room. */
  async adopt(deck) {
    if (!deck?.lesson) {
      if (this.playing) this.stop({ tell: false });
      return;
    }
    let lesson = this.playing?.lesson.id === deck.lesson ? this.playing.lesson : null;
    lesson ??= await call("GET", `/api/lessons/${deck.lesson}`, { secret: teacherToken() }).catch(() => null);
    if (!lesson) return;
    this.playing = { lesson, index: Math.min(deck.index, lesson.views.length - 1) };
    this.redraw();
  }

  stop({ tell = true } = {}) {
    this.playing = null;
    this.playBar.hidden = true;
    document.body.classList.remove("cr-lesson-playing");
    if (tell) this.onShow?.(null);
  }

  async exportSelected() {
    const lesson = await this.selected().catch((e) => this.say(e.message));
    if (!lesson) return;
    const body = JSON.stringify({ title: lesson.title, views: lesson.views }, null, 2);
    const url = URL.createObjectURL(new Blob([body], { type: "application/json" }));
    const a = el("a", { href: url, download: `${lesson.title.replace(/[^\w-]+/g, "-").slice(0, 60) || "lesson"}.json` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  async importFile(input) {
    const file = input.files?.[0];
    input.value = "";
    if (!file) return;
    try {
      const data = JSON.parse(await file.text());
      const { id } = await call("POST", "/api/lessons", {
        body: { title: data.title, views: data.views },
        secret: teacherToken(),
      });
      await this.refresh();
      this.list.value = String(id);
      this.say(say("imported", { id }));
    } catch (e) {
      this.say(say("notImported", { reason: e.message }));
    }
  }

  async edit() {
    const lesson = await this.selected().catch((e) => this.say(e.message));
    if (lesson) this.editor.open(lesson);
  }

  /** One PUT naming the version the edit was made from: a lesson saved elsewhere since is never overwritten unasked. */
  async saveEdit({ id, title, views, version }) {
    try {
      await call("PUT", `/api/lessons/${id}`, { body: { title, views }, secret: teacherToken(), ifMatch: `"${version}"` });
      await this.refresh();
      this.list.value = String(id);
      this.say(`Lesson ${id} saved (${views.length} view${views.length === 1 ? "" : "s"}).`);
    } catch (e) {
      this.say(e.status === 412 ? say("conflict") : say("notSaved", { reason: e.message }));
      throw e;
    }
  }

  /** Swap the selected lesson with its neighbour in the list (delta −1: up, +1: down). */
  async move(delta) {
    const options = [...this.list.options];
    const i = options.findIndex((o) => o.value === this.list.value);
    const j = i + delta;
    if (i < 0 || j < 0 || j >= options.length) return;
    const id = this.list.value;
    try {
      const ids = delta < 0 ? [id, options[j].value] : [options[j].value, id];
      await call("PUT", "/api/lessons/order", { body: { ids: ids.map(Number) }, secret: teacherToken() });
      await this.refresh();
      this.list.value = id;
      this.say(say("moved"));
    } catch (e) {
      this.say(e.message);
    }
  }

  /** Go through the lesson's views in the page and collect each one (the page comes back after). */
  async walk(make, done) {
    const lesson = await this.selected().catch((e) => this.say(e.message));
    if (!lesson) return;
    this.stop();
    try {
      const result = await make(lesson, (i) => this.say(say("progress", { i: i + 1, n: lesson.views.length })));
      this.say(done(lesson, result));
    } catch (e) {
      this.say(say("failed", { reason: e.message }));
    }
  }

  handout({ notes = false } = {}) {
    return this.walk(
      (lesson, progress) => buildHandout(lesson, progress, { notes }),
      (lesson, handout) => {
        showHandout(handout);
        return say(notes ? "handoutNotesReady" : "handoutReady", { title: quote(lesson.title) });
      },
    );
  }

  offline() {
    return this.walk(offlineLesson, (lesson, n) => say("offlineReady", { title: quote(lesson.title), n }));
  }

  async remove() {
    if (!this.list.value) return;
    const name = this.list.selectedOptions[0]?.textContent ?? say("thisLesson");
    if (!window.confirm(say("deleteConfirm", { name: quote(name) }))) return;
    try {
      await call("DELETE", `/api/lessons/${this.list.value}`, { secret: teacherToken() });
      await this.refresh();
      this.say(say("deleted"));
    } catch (e) {
      this.say(e.message);
    }
  }
}
