// Fitting a 3-D view to its container: the renderer, the label layer and the camera take the
// container's size, and a drawing is redone when that size changes.

/** The renderer, the CSS2D label layer and the camera's aspect set to `container`'s size (at least 1×1). */
export function fitToContainer(container, renderer, labels, camera) {
  const w = Math.max(1, container.clientWidth);
  const h = Math.max(1, container.clientHeight);
  renderer.setSize(w, h, false);
  labels.setSize(w, h);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
}

/** `container`'s size as "W×H" text, to compare with the size a drawing was made for. */
export function sizeOf(container) {
  return `${container.clientWidth}x${container.clientHeight}`;
}

/**
 * Redraws `owner` (`owner.update(...owner.last)`) when the stage's container changes size and
 * differs from `owner.size`, the size (sizeOf) its last update was drawn for. Returns the observer.
 */
export function redrawOnResize(owner, stage) {
  const resizer = new ResizeObserver(() => {
    const size = sizeOf(stage.container);
    if (owner.last && size !== owner.size) owner.update(...owner.last);
  });
  resizer.observe(stage.container);
  return resizer;
}
