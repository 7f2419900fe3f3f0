// What the classroom keeps for this tab (sessionStorage: gone when the tab closes, never in the URL).
//
//   teacher token      from the teacher link /?token=…, removed from the address bar at once
//   presenter room     { code, key, join_url } of the room this tab drives
//   follower room      the code this tab follows (a reload rejoins it)
//   seat               the server's seat from this browser's first hello in a room (localStorage: every
//                      tab of this browser, and a page opened again from the QR code, keeps it): offered
//                      when the socket connects, so a page that reconnects or reloads keeps its one vote

const store = window.sessionStorage;
const KEYS = { token: "a3d.teacher", presenter: "a3d.presenter", room: "a3d.room", seat: "a3d.seat" };

function read(key) {
  try {
    return store.getItem(key);
  } catch {
    return null;
  }
}

function write(key, value) {
  try {
    if (value === null) store.removeItem(key);
    else store.setItem(key, value);
  } catch {
    /* storage refused (private mode): the tab still works until it is reloaded */
  }
}

/** A view state without the classroom's own parameters (the server refuses them in a view). */
export function viewOnly(params) {
  const out = { ...params };
  delete out.room;
  delete out.present;
  delete out.teacher;
  delete out.key;
  if (out.token !== undefined && !/^\d{0,4}$/.test(String(out.token))) delete out.token; // never a secret
  return out;
}

/** A room code as the server keeps it: upper case, without the spaces or dashes a student may type. */
export const normalCode = (code) => String(code ?? "").toUpperCase().replace(/[\s-]+/g, "").slice(0, 32);

/** Read ?token=, ?room= and ?present= once, keep them, and take the token out of the address bar. */
export function takeUrl() {
  const url = new URL(window.location.href);
  // ?token=3 is the heads chapter's token index; a teacher token is long (≥ 16 characters)
  const raw = url.searchParams.get("token");
  const token = raw && !/^\d{0,4}$/.test(raw) ? raw : null;
  const room = url.searchParams.get("room");
  const present = url.searchParams.get("present") === "1";
  const teacher = url.searchParams.get("teacher") === "1"; // the teacher's window (notes and controls)
  if (token) write(KEYS.token, token);
  if (room && !teacher) write(KEYS.room, normalCode(room)); // (the teacher's phone drives it: no follower)
  // the classroom's own parameters leave the address bar before the page reads it: the token is a
  // secret, and none of them is part of the view (the page would keep them as a chapter's parameters)
  const ours = ["room", "present", "teacher", ...(token ? ["token"] : [])];
  if (ours.some((k) => url.searchParams.has(k))) {
    for (const k of ours) url.searchParams.delete(k);
    window.history.replaceState(null, "", url.pathname + (url.search || "") + url.hash);
  }
  // a bare /?present=1 names no view: a projector reloaded that way takes up its room's view
  const names = [...url.searchParams.keys()].some((k) => k !== "lang"); // ?lang= is the reader's, not a view
  return { room: room ? normalCode(room) || null : null, present, teacher, hadToken: Boolean(token), namesView: names };
}

export const teacherToken = () => read(KEYS.token);
export const keepTeacherToken = (token) => write(KEYS.token, token);
export const forgetToken = () => write(KEYS.token, null);

export function presenterRoom() {
  try {
    return JSON.parse(read(KEYS.presenter) ?? "null");
  } catch {
    return null;
  }
}
export const keepPresenterRoom = (room) => write(KEYS.presenter, room ? JSON.stringify(room) : null);

export const followedRoom = () => read(KEYS.room);
export const keepFollowedRoom = (code) => write(KEYS.room, code);

/** The seat this browser keeps for room `code` (the first one the server gave it there), or null. */
export function seatFor(code) {
  try {
    const kept = JSON.parse(window.localStorage.getItem(KEYS.seat) ?? "null");
    return kept && kept.code === code && typeof kept.seat === "string" ? kept.seat : null;
  } catch {
    return null;
  }
}

export function keepSeat(code, seat) {
  try {
    window.localStorage.setItem(KEYS.seat, JSON.stringify({ code, seat }));
  } catch {
    /* storage refused: the seat lasts as long as this socket */
  }
}
