// The lesson being recorded, kept in this browser (localStorage) until it is saved or discarded, so a
// reload, a closed tab or a crashed browser loses no recorded view.
//
//   readDraft()          { title, views: [{ state, note }] } or null
//   keepDraft(draft)     null forgets it

const KEY = "a3d.lesson-draft";

export function readDraft() {
  try {
    const draft = JSON.parse(window.localStorage.getItem(KEY) ?? "null");
    if (!draft || !Array.isArray(draft.views) || !draft.views.length) return null;
    const views = draft.views.filter((v) => v && typeof v.state === "object" && v.state !== null);
    return views.length ? { title: typeof draft.title === "string" ? draft.title : "", views } : null;
  } catch {
    return null;
  }
}

export function keepDraft(draft) {
  try {
    if (draft?.views?.length) window.localStorage.setItem(KEY, JSON.stringify(draft));
    else window.localStorage.removeItem(KEY);
    return true;
  } catch {
    return false; // storage refused (private mode, full): the draft lives until the page closes
  }
}
