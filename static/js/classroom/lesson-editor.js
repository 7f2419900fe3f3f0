// The lesson editor: rename a saved lesson, edit each view's note, move views up and down, put the
// page's current view in place of one, remove views. Nothing is sent until "Save changes" (one PUT,
// naming the version it was made from). When the lesson was saved elsewhere meanwhile (another tab,
// another teacher), the server refuses (412) and the editor says so, keeping these edits on screen
// until the teacher picks: reload the saved lesson (these edits go) or overwrite it with these.
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { applyViewState, viewState } from "../pageview.js";
import { viewSummary } from "./lesson-views.js";
import { viewOnly } from "./session.js";

/** A word of the lesson editor (classroom.editor.…), read when drawn. */
const say = (key, values) => t(`classroom.editor.${key}`, values);

/** The views with view i moved by delta places (unchanged when it would leave the list). */
export function moveView(views, i, delta) {
  const j = i + delta;
  if (j < 0 || j >= views.length) return views;
  const out = [...views];
  [out[i], out[j]] = [out[j], out[i]];
  return out;
}

/** The version an ETag names ('"7"' → 7), or null. */
export function versionOf(etag) {
  const match = /^"(\d+)"$/.exec(etag ?? "");
  return match ? Number(match[1]) : null;
}

export class LessonEditor {
  /** onSave({ id, title, views, version }) → promise (rejects with .status 412 and .etag when the lesson
   * changed since `version`); onReload(id) → promise of the lesson as saved now; onClose() */
  constructor(host, { onSave, onReload, onClose }) {
    this.onSave = onSave;
    this.onReload = onReload;
    this.onClose = onClose;
    this.root = el("section", { className: "cr-editor", "aria-label": say("label"), dataset: { testid: "lesson-editor" } });
    this.root.hidden = true;
    host.append(this.root);
    this.lesson = null;
  }

  open(lesson) {
    this.lesson = {
      id: lesson.id,
      title: lesson.title,
      version: lesson.version,
      views: lesson.views.map((v) => ({ state: { ...v.state }, note: v.note })),
    };
    this.root.hidden = false;
    this.draw();
  }

  close() {
    this.lesson = null;
    this.root.hidden = true;
    this.root.replaceChildren();
    this.onClose();
  }

  button(text, testid, label, onClick, disabled = false) {
    const b = el("button", { type: "button", "aria-label": label, title: label, dataset: { testid } }, text);
    b.disabled = disabled;
    b.addEventListener("click", onClick);
    return b;
  }

  draw() {
    const { views } = this.lesson;
    const title = el("input", { type: "text", maxlength: "200", "aria-label": t("classroom.lessons.titleLabel"), dataset: { testid: "lesson-edit-title" } });
    title.value = this.lesson.title;
    title.addEventListener("input", () => (this.lesson.title = title.value));
    const list = el("ol", { className: "cr-editor-views", dataset: { testid: "lesson-edit-views" } });
    views.forEach((view, i) => {
      const note = el("input", {
        type: "text",
        maxlength: "2000",
        placeholder: t("classroom.lessons.notePlaceholder"),
        "aria-label": say("note", { n: i + 1 }),
        dataset: { testid: "lesson-edit-note" },
      });
      note.value = view.note;
      note.addEventListener("input", () => (view.note = note.value));
      const move = (delta) => {
        this.lesson.views = moveView(views, i, delta);
        this.draw();
      };
      const row = el("li", { className: "cr-editor-view", dataset: { testid: "lesson-edit-view" } });
      const tools = el("span", { className: "cr-editor-tools" });
      tools.append(
          this.button(say("show"), "lesson-edit-show", say("showTitle", { n: i + 1 }), () => applyViewState(view.state)),
          this.button(say("capture"), "lesson-edit-capture", say("captureTitle", { n: i + 1 }), () => {
            view.state = viewOnly(viewState());
            this.draw();
          }),
          this.button("↑", "lesson-edit-up", say("upTitle", { n: i + 1 }), () => move(-1), i === 0),
          this.button("↓", "lesson-edit-down", say("downTitle", { n: i + 1 }), () => move(1), i === views.length - 1),
          this.button("✕", "lesson-edit-remove", say("removeTitle", { n: i + 1 }), () => {
            this.lesson.views = views.filter((_, j) => j !== i);
            this.draw();
          }, views.length === 1),
      );
      row.append(el("span", { className: "cr-editor-what", dataset: { testid: "lesson-edit-what" } }, viewSummary(view.state)), note, tools);
      list.append(row);
    });
    const save = this.button(say("save"), "lesson-edit-save", say("saveTitle"), () => this.save(save));
    const cancel = this.button(say("cancel"), "lesson-edit-cancel", say("cancelTitle"), () => this.close());
    const buttons = el("p", { className: "cr-lessons-row" });
    buttons.append(save, cancel);
    this.conflictBox = el("div", { className: "cr-editor-conflict", role: "alert", dataset: { testid: "lesson-conflict" } });
    this.conflictBox.hidden = true;
    this.root.replaceChildren(el("h3", {}, say("label")), title, list, this.conflictBox, buttons);
  }

  async save(button) {
    button.disabled = true;
    try {
      await this.onSave({ ...this.lesson, title: this.lesson.title.trim() || "A lesson" });
      this.close();
    } catch (e) {
      if (e.status === 412) this.conflict(versionOf(e.etag));
    } finally {
      button.disabled = false;
    }
  }

  /** The lesson was saved elsewhere since it was opened here (it is at version `current` now). */
  conflict(current) {
    const reload = this.button(say("reload"), "lesson-conflict-reload", say("reloadTitle"), async () => {
      try {
        this.open(await this.onReload(this.lesson.id));
      } catch {
        /* the lessons' status line says why */
      }
    });
    const overwrite = this.button(say("overwrite"), "lesson-conflict-overwrite", say("overwriteTitle"), () => {
      this.lesson.version = current;
      return this.save(overwrite);
    }, current === null);
    const text = el("p", {}, say("conflict"));
    const choice = el("p", { className: "cr-lessons-row" });
    choice.append(reload, overwrite);
    this.conflictBox.replaceChildren(text, choice);
    this.conflictBox.hidden = false;
    reload.focus();
  }
}
