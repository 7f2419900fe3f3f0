// The page's seams for modules that act on the whole view (the classroom, the exports):
// main.js provides the view once it is drawn; other modules read it and follow its changes
// through these functions, and never reach into main.js or its state directly.
//
//   viewState()            the view as plain URL parameters: { chapter, example | sentence, step, mask,
//                          focus, layer, head, merge, tokens, q, k, v, ... } (strings, as in the address bar)
//   applyViewState(params) go to that view (no reload, no history entry); resolves once it is drawn
//   currentView()          what is on screen now: { chapter, step, stage, mask, focus, tokens, answer,
//                          title, text, canvas, renderScene(scale) -> HTMLCanvasElement }
//   onViewChange(cb)       cb(viewState()) after every change of the view; returns an unsubscribe function
//   whenReady(cb)          cb() once main.js has provided the view (at once if it already has)
//
// The same seam as DOM events on `document`, for code that does not share these modules (the
// bundled page's tests, a page that embeds the app): "attention:view" is dispatched after every
// change with detail = viewState(); dispatching "attention:apply" with detail = params applies
// them (detail.done becomes the applyViewState() promise); dispatching "attention:current" with
// detail = {} sets detail.view = currentView() (events are dispatched synchronously).

let provider = null;
const changeListeners = new Set();
const readyListeners = [];

/** main.js only: { state(), apply(params), current() }. */
export function provideView(impl) {
  provider = impl;
  for (const cb of readyListeners.splice(0)) cb();
}

/** main.js only: after every change of what the view shows (and its URL). */
export function viewChanged() {
  if (!provider) return;
  const params = provider.state();
  for (const cb of changeListeners) cb(params);
  document.dispatchEvent(new CustomEvent("attention:view", { detail: params }));
}

document.addEventListener("attention:apply", (e) => {
  if (e.detail && typeof e.detail === "object") e.detail.done = applyViewState({ ...e.detail });
});
document.addEventListener("attention:current", (e) => {
  if (e.detail && typeof e.detail === "object") e.detail.view = currentView();
});

export function whenReady(cb) {
  if (provider) cb();
  else readyListeners.push(cb);
}

export function onViewChange(cb) {
  changeListeners.add(cb);
  return () => changeListeners.delete(cb);
}

export function viewState() {
  return provider ? provider.state() : {};
}

export function applyViewState(params) {
  return provider ? provider.apply(params) : Promise.resolve();
}

export function currentView() {
  return provider ? provider.current() : null;
}
