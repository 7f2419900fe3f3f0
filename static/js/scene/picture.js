// A picture of a three.js view at a larger size, for the exports (pageview.js currentView().renderScene).

/**
 * Render `scene` from `camera` with `renderer` at `scale` × its current size onto a new 2-D
 * canvas, then put the renderer back as it was. Only the WebGL drawing: the CSS2D labels are
 * HTML on top of it (currentView().labels holds that layer).
 */
export function renderAt(renderer, scene, camera, scale = 1) {
  const s = Math.min(8, Math.max(0.25, Number(scale) || 1));
  const ratio = renderer.getPixelRatio();
  renderer.setPixelRatio(ratio * s); // resizes the drawing buffer, not the canvas on the page
  renderer.render(scene, camera);
  const src = renderer.domElement;
  const out = document.createElement("canvas");
  out.width = src.width;
  out.height = src.height;
  out.getContext("2d").drawImage(src, 0, 0); // same task as the render: the buffer is still there
  renderer.setPixelRatio(ratio);
  renderer.render(scene, camera);
  return out;
}
