// The page's view, for modules that act on the whole page (the classroom, the exports): they
// read it and follow its changes through these functions, and never reach into main.js or the
// store directly. main.js provides the view (and the store) once it is drawn.
//
//   viewState()            the view as plain URL parameters: { chapter, example | sentence, step, mask,
//                          focus, layer, head, merge, tokens, q, k, v, predict, a chapter's own ... }
//   snapshot()             the same: the room snapshot, every kind of state (state.js snapshot())
//   applyViewState(params) go to that view (no reload, no history entry); resolves once it is drawn;
//   applySnapshot(snap)    the same: what the snapshot names wins (focus, mask, step, …)
//   currentView()          what is on screen now: { chapter, step, stage, mask, focus, tokens, answer,
//                          answers, withheld, title, text, numbers, code, canvas, labels, renderScene(scale) }
//                          (while withheld: answer without weights and output, answers null)
//   withhold(reason, on)   hold everything derived from the weights back on this page for `reason`
//                          ("quiz", "numbers", "teacher", "hidden", …), or (on = false) stop for it
//   withholding()          the reasons that hold now, sorted ([] when the weights show)
//   release()              drop every reason: show them again
//   reframe()              fit the 3D view on screen to its content (the projector view, a resize)
//   presenting(on)         the projector view on or off: the view draws fewer rows and words at once
//   classRole(role)        the page's part in a class beside presenting: "teacher", "follower", or null
//   onViewChange(cb)       cb(viewState()) after every change of the view; returns an unsubscribe function
//   whenReady(cb)          cb() once main.js has provided the view (at once if it already has)
//
// The same seam as DOM events on `document`, for code that does not share these modules (the
// bundled page's tests, a page that embeds the app): "attention:view" is dispatched after every
// change with detail = viewState(); dispatching "attention:apply" with detail = params applies
// them (detail.done becomes the applyViewState() promise); dispatching "attention:current" with
// detail = {} sets detail.view = currentView(); "attention:snapshot" with detail = {} sets
// detail.snapshot = snapshot(); "attention:withhold" with detail = { reason } (or {}: release)
// withholds; "attention:reframe" reframes (events are dispatched synchronously).

import { renderAt } from "./scene/picture.js";

/**
 * This module's one piece of state, named: what main.js provided (null until the page is drawn
 * the first time), and who listens for it and for every change. The page's own state, the
 * withholding included, is the store's (state.js).
 */
const seam = { view: null, changeListeners: new Set(), readyListeners: [] };
const impl = () => seam.view;

/** main.js only: { store, state(), apply(params), current(), reframe() }. */
export function provideView(view) {
  seam.view = view;
  for (const cb of seam.readyListeners.splice(0)) cb();
}

/** main.js only: after every change of what the view shows (and its URL). */
export function viewChanged() {
  if (!impl()) return;
  const params = impl().state();
  for (const cb of seam.changeListeners) cb(params);
  document.dispatchEvent(new CustomEvent("attention:view", { detail: params }));
}

document.addEventListener("attention:apply", (e) => {
  if (e.detail && typeof e.detail === "object") e.detail.done = applyViewState({ ...e.detail });
});
document.addEventListener("attention:current", (e) => {
  if (e.detail && typeof e.detail === "object") e.detail.view = currentView();
});
document.addEventListener("attention:snapshot", (e) => {
  if (e.detail && typeof e.detail === "object") e.detail.snapshot = snapshot();
});
document.addEventListener("attention:reframe", () => reframe());
document.addEventListener("attention:withhold", (e) => {
  if (e.detail && typeof e.detail === "object" && e.detail.reason) withhold(String(e.detail.reason));
  else release();
});

export function whenReady(cb) {
  if (impl()) cb();
  else seam.readyListeners.push(cb);
}

export function onViewChange(cb) {
  seam.changeListeners.add(cb);
  return () => seam.changeListeners.delete(cb);
}

export function viewState() {
  return impl() ? impl().state() : {};
}

export const snapshot = viewState;

export function applyViewState(params) {
  return impl() ? impl().apply(params) : Promise.resolve();
}

export const applySnapshot = applyViewState;

export function currentView() {
  return impl() ? impl().current() : null;
}

export function withhold(reason = "quiz", on = true) {
  impl()?.store.act.withhold(reason, on);
}

export function withholding() {
  return impl() ? [...impl().store.state.holds] : [];
}

export function release() {
  impl()?.store.act.release();
}

export function reframe() {
  impl()?.reframe();
}

export function presenting(on) {
  impl()?.store.act.setPresenting(on);
}

export function classRole(role) {
  impl()?.store.act.setRole(role);
}

// ---- what main.js uses to provide the view -------------------------------------------------

/** A promise for "the page is drawn" (#app data-ready="true"), and settle() to keep it. */
export function drawnSignal(root) {
  const waiters = [];
  return {
    settle() {
      for (const resolve of waiters.splice(0)) resolve();
    },
    whenDrawn() {
      if (root.dataset.ready === "true") return Promise.resolve();
      return new Promise((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 20_000); // a view that never settles (a server error) still resolves
      });
    },
  };
}

/** An answer with nothing derived from the weights: the question's givens only. */
function givens(answer) {
  if (!answer) return answer;
  const { weights, output, ...rest } = answer;
  return rest;
}

/**
 * currentView(): `attention` is the attention view on (steps, masks); `three` the 3D view drawn
 * now (SceneView or Stage: renderer, scene, camera, labels); `stage` the API stage shown (scores,
 * scaled, masked, weights) or another chapter's step id.
 */
export function describeView({ state, step, attention, three, stage, tokens, answer, withheld }) {
  const $ = (id) => document.getElementById(id);
  return {
    chapter: state.chapter,
    step,
    stage,
    mask: state.mask,
    focus: state.focus,
    tokens,
    answer: withheld ? givens(answer) : answer,
    answers: attention && !withheld ? state.result : null, // both masks' answers { full, causal } (attention chapters)
    result: attention && !withheld ? state.result : null, // the same (an older name)
    withheld: withheld ?? null,
    title: $(attention ? "step-title" : "chapter-title").textContent,
    text: $(attention ? "step-text" : "chapter-text").textContent,
    numbers: [...$("lesson-numbers").querySelectorAll("li")].map((li) => li.textContent),
    code: $("numpy-code").textContent, // the NumPy panel's program
    canvas: three?.renderer.domElement ?? null,
    labels: three?.labels.domElement ?? null, // the CSS2D labels over the canvas
    renderScene: (scale = 1) => (three ? renderAt(three.renderer, three.scene, three.camera, scale) : null),
  };
}
