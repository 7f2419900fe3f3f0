// The home page's "Join a room" box: a student types the code the projector shows (any case, with
// or without spaces and dashes) and lands in the room. Without this script the form still works
// (a plain GET of /?room=CODE); with it, a code that names no room is answered in the box itself.

import { call } from "../api.js";
import { t } from "../i18n.js";
import { normalCode } from "./session.js";

/** Wire the join form (templates/index.html), or take it away where it has no use. */
export function joinBox({ shown }) {
  const form = document.getElementById("join-form");
  if (!form) return;
  if (!shown) {
    form.remove(); // in a room already, or the teacher's own page
    return;
  }
  const input = form.querySelector("input");
  const say = form.querySelector("[role=status]");
  input.addEventListener("input", () => {
    say.textContent = "";
    input.removeAttribute("aria-invalid");
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const code = normalCode(input.value);
    const refuse = (text) => {
      say.textContent = text;
      input.setAttribute("aria-invalid", "true");
      input.focus();
    };
    if (!code) return refuse(t("classroom.join.noCode"));
    try {
      await call("GET", `/api/rooms/${encodeURIComponent(code)}`);
    } catch (err) {
      if (err.status === 404) return refuse(t("classroom.join.noRoom", { code }));
      if (err.status !== undefined && err.status !== 503) return refuse(err.message);
      // the server is busy or its room store away: go anyway, the room's page waits for it
    }
    window.location.assign(`/?room=${encodeURIComponent(code)}`);
  });
}
