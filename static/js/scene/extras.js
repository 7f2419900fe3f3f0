// What a scene object draws again on every update (its "extras": meshes, lines, labels) and what it
// frees when its chapter closes: one place for the tail the chapter `inside`'s layer stack and bar
// column share.

/**
 * Takes each of `extras` off the scene and frees what it alone holds: an InstancedMesh's instance
 * colours and matrices (its geometry is shared with the next update's), a plain mesh's or line's own
 * geometry, a label's element. Returns an empty list, the extras after.
 */
export function clearExtras(extras) {
  for (const o of extras) {
    o.removeFromParent();
    if (o.isInstancedMesh) o.dispose();
    else o.geometry?.dispose();
    if (o.element) o.element.remove();
  }
  return [];
}

/**
 * Frees a scene object for good: its resize observer stopped (`owner.resizer`), its extras cleared
 * (`owner.clear()`), its group taken off the scene, and the geometries and materials in `owned`
 * (the ones every update shares) disposed.
 */
export function disposeDrawing(owner, owned) {
  owner.resizer.disconnect();
  owner.clear();
  owner.group.removeFromParent();
  for (const o of owned) o.dispose();
}

/**
 * About how many pixels a scene unit takes once the stage has fitted a drawing: the container over
 * `span`, the whole drawing's extent (of this object's `size` and a unit of margin on each side when
 * it is alone on the stage).
 */
export function pixelsPerUnit(container, size, span = null) {
  const s = span ?? { width: size.width + 2, height: size.height + 2 };
  return Math.max(1, Math.min(container.clientWidth / s.width, container.clientHeight / s.height));
}
