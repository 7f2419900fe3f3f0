// The classroom: presenter view, following a room, the live quiz, saved lessons.
// Its controls live in #classroom-bar; everything else reads and drives the page through pageview.js.
//
//   /?token=T      the teacher link: the token is kept for this tab and leaves the address bar
//   /?present=1    the projector view
//   /?teacher=1    the teacher's window: notes, the next step, the answers coming in, the controls
//   /?room=CODE    follow a room (students; the QR code opens this)

import { isTextField } from "../keys.js";
import { whenReady } from "../pageview.js";
import { closeTabs } from "./fit.js";
import { Follower } from "./follower.js";
import { joinBox } from "./join.js";
import { Lessons } from "./lessons.js";
import { onePanelAtATime } from "./panels.js";
import { Presenter } from "./presenter.js";
import { followedRoom, presenterRoom, takeUrl, teacherToken } from "./session.js";
import { TeacherPanel } from "./teacher.js";

const asked = takeUrl(); // before main.js writes its own URL

whenReady(() => {
  const bar = document.getElementById("classroom-bar");
  if (!bar) return;
  const room = asked.teacher ? null : (asked.room ?? (asked.present || teacherToken() ? null : followedRoom()));
  joinBox({ shown: !room && !teacherToken() && !asked.present && !asked.teacher }); // a student's way into a room
  if (room) {
    new Follower(bar, room);
    return;
  }
  const presenter = new Presenter(bar, { teacher: asked.teacher });
  const lessons = teacherToken() || asked.teacher ? new Lessons(bar) : null;
  if (asked.teacher) {
    new TeacherPanel(presenter);
    // the projector's room: this window was opened from it (or it tells us); on the teacher's phone used as a
    // remote, the teacher link names it (?token=…&teacher=1&room=CODE) and the token drives it
    const kept = presenterRoom();
    if (asked.room && teacherToken()) presenter.start({ code: asked.room, key: teacherToken(), join_url: "" });
    else if (kept) presenter.start(kept);
  }
  onePanelAtATime(bar);
  if (asked.present) presenter.setPresenting(true, { adopt: !asked.namesView });
  if (lessons) {
    // the lesson the teacher plays reaches both of the teacher's windows (the room tells presenters
    // only): the projector shows its views, the teacher's window their notes
    lessons.onShow = (deck) => presenter.putDeck(deck);
    presenter.on("deck", (deck) => lessons.adopt(deck));
    presenter.on("room", () => lessons.redraw());
  }

  // before the page's own keys (keys.js listens on document; this runs first, in the capture phase)
  window.addEventListener(
    "keydown",
    (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || isTextField(e.target)) return;
      if (lessons?.playing && (e.key === "PageDown" || e.key === "PageUp")) {
        e.preventDefault();
        lessons.step(e.key === "PageDown" ? 1 : -1);
        return;
      }
      if (!presenter.presenting) return;
      if (e.key === "b" || e.key === "B" || e.key === ".") {
        e.preventDefault();
        presenter.toggleBlank();
      } else if (e.key === "h" || e.key === "H") {
        e.preventDefault();
        presenter.toggleNumbers();
      } else if (e.key === "Escape" && !presenter.blank.hidden) {
        presenter.toggleBlank(false);
      } else if (e.key === "Escape") {
        closeTabs(); // an open tab's sheet (fit.js)
      }
    },
    true,
  );
});
