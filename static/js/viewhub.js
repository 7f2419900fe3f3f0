// What main.js hands to hub.js: "the view is drawn" as a promise, and the description of the
// view on screen (hub.js currentView()) for the classroom and the exports.

import { renderAt } from "./snapshot.js";

const $ = (id) => document.getElementById(id);

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

/**
 * hub.js currentView(): `attention` is the attention view on (steps, masks); `three` the 3D
 * view drawn now (SceneView or Stage: renderer, scene, camera, labels); `stage` the API stage
 * shown (scores, scaled, masked, weights) or another chapter's step id.
 */
export function describeView({ state, lesson, attention, three, stage, tokens, answer }) {
  return {
    chapter: state.chapter,
    step: lesson.stepId() ?? state.step,
    stage,
    mask: state.mask,
    focus: state.focus,
    tokens,
    answer,
    answers: attention ? state.result : null, // both masks' answers { full, causal } (attention chapters)
    result: attention ? state.result : null, // the same (an older name)
    title: $(attention ? "step-title" : "chapter-title").textContent,
    text: $(attention ? "step-text" : "chapter-text").textContent,
    numbers: [...$("lesson-numbers").querySelectorAll("li")].map((li) => li.textContent),
    code: lesson.code, // the NumPy panel's program
    canvas: three?.renderer.domElement ?? null,
    labels: three?.labels.domElement ?? null, // the CSS2D labels over the canvas
    renderScene: (scale = 1) => (three ? renderAt(three.renderer, three.scene, three.camera, scale) : null),
  };
}
