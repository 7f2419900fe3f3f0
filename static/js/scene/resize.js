// A chapter's drawing redone when its view changes size: the stage (stage.js) notices the change
// and fits its canvas (surface.js's fitToContainer), then calls the drawings that asked (onResize).

/** `container`'s size as "W×H" text, to compare with the size a drawing was made for. */
export function sizeOf(container) {
  return `${container.clientWidth}x${container.clientHeight}`;
}

/**
 * Redraws `owner` (`owner.update(...owner.last)`) when the stage's container changes size and
 * differs from `owner.size`, the size (sizeOf) its last update was drawn for. Returns what
 * `disconnect()` stops.
 */
export function redrawOnResize(owner, stage) {
  return stage.onResize((size) => {
    if (owner.last && size !== owner.size) owner.update(...owner.last);
  });
}
