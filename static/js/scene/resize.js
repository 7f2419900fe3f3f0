// A chapter's drawing redone when its view changes size (the view itself is fitted by
// surface.js's fitToContainer).

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
