// What the classroom keeps for this tab (sessionStorage: gone when the tab closes, never in the URL).
//
//   teacher token      from the teacher link /?token=…, removed from the address bar at once
//   presenter room     { code, key, join_url } of the room this tab drives
//   follower room      the code this tab follows (a reload rejoins it)
//   seat               the server's seat from this tab's first hello in a room: sent with a vote, so
//                      that a page that reconnects or reloads keeps its single vote
//   quiz answer        the answer of the question this tab asked (read before the weights are withheld)

const store = window.sessionStorage;
const KEYS = { token: "a3d.teacher", presenter: "a3d.presenter", room: "a3d.room", seat: "a3d.seat", answer: "a3d.answer" };

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
  delete out.key;
  if (out.token !== undefined && !/^\d{0,4}$/.test(String(out.token))) delete out.token; // never a secret
  return out;
}

/** Read ?token=, ?room= and ?present= once, keep them, and take the token out of the address bar. */
export function takeUrl() {
  const url = new URL(window.location.href);
  // ?token=3 is the heads chapter's token index; a teacher token is long (≥ 16 characters)
  const raw = url.searchParams.get("token");
  const token = raw && !/^\d{0,4}$/.test(raw) ? raw : null;
  const room = url.searchParams.get("room");
  const present = url.searchParams.get("present") === "1";
  if (token) write(KEYS.token, token);
  if (room) write(KEYS.room, room.trim().toUpperCase());
  // the classroom's own parameters leave the address bar before the page reads it: the token is a
  // secret, and none of them is part of the view (the page would keep them as a chapter's parameters)
  const ours = ["room", "present", ...(token ? ["token"] : [])];
  if (ours.some((k) => url.searchParams.has(k))) {
    for (const k of ours) url.searchParams.delete(k);
    window.history.replaceState(null, "", url.pathname + (url.search || "") + url.hash);
  }
  // a bare /?present=1 names no view: a projector reloaded that way takes up its room's view
  const names = [...url.searchParams.keys()].some((k) => k !== "lang"); // ?lang= is the reader's, not a view
  return { room: room ? room.trim().toUpperCase() : null, present, hadToken: Boolean(token), namesView: names };
}

export const teacherToken = () => read(KEYS.token);
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

/** The seat this tab keeps for room `code` (the first one the server gave it there), or null. */
export function seatFor(code) {
  try {
    const kept = JSON.parse(read(KEYS.seat) ?? "null");
    return kept && kept.code === code ? kept.seat : null;
  } catch {
    return null;
  }
}

export const keepSeat = (code, seat) => write(KEYS.seat, JSON.stringify({ code, seat }));

/** The presenter: the answer of the quiz it asked (its id and the word's index). */
export const keepQuizAnswer = (id, answer) => write(KEYS.answer, JSON.stringify({ id, answer }));

export function quizAnswer(id) {
  try {
    const kept = JSON.parse(read(KEYS.answer) ?? "null");
    return kept && kept.id === id && Number.isInteger(kept.answer) ? kept.answer : null;
  } catch {
    return null;
  }
}
