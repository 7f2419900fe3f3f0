// What a scene object draws again on every update (its "extras": meshes, lines, labels) and what it
// frees when its chapter closes: Drawing, the common part of the grids and of the chapter `inside`'s
// layer stack and bar column.

import * as THREE from "three";
import { sizeOf } from "./resize.js";

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
 * A scene object drawn anew at each update: the grids of columns (bargrid.js, headgrids.js,
 * tilegrid.js), the layer stack and the bar column (layerstack.js, barcolumn.js). It holds its group
 * on the stage, the extras of its last update (floors, bands, labels: freed when the next begins),
 * its one InstancedMesh of cells (the grids'), and the last update's arguments, drawn again by
 * `redraw(last)` (the subclass's) when the view changes size.
 */
export class Drawing {
  /** @param stage a Stage (scene/stage.js); name: the group's name in the scene */
  constructor(stage, name) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = name;
    stage.root.add(this.group);
    this.mesh = null; // every cell (cells())
    this.extras = []; // what the last update added besides the cells
    this.last = null; // the last update's arguments
    this.shown = ""; // the view's size when they were drawn
    this.resizer = stage.onResize((size) => {
      if (this.last && size !== this.shown) this.redraw(this.last);
    });
  }

  /** An update begins: its arguments kept (`last`), the last update's extras freed. */
  begin(last) {
    this.last = last;
    this.shown = sizeOf(this.stage.container);
    this.clear();
  }

  /** The InstancedMesh of `count` cells (of the subclass's geometry and material), made anew when the count changes. */
  cells(count, name) {
    if (!this.mesh || this.mesh.count !== count) {
      if (this.mesh) {
        this.group.remove(this.mesh);
        this.mesh.dispose();
      }
      this.mesh = new THREE.InstancedMesh(this.geometry, this.material, Math.max(1, count));
      this.mesh.count = count;
      this.mesh.name = name;
      this.group.add(this.mesh);
    }
    return this.mesh;
  }

  /** `obj` added to `parent` (the group) until the next update. */
  keep(obj, parent = this.group) {
    parent.add(obj);
    this.extras.push(obj);
    return obj;
  }

  /**
   * A label (Stage.label) until the next update: at `position` in the stage's frame, or in the
   * group's with `inGroup` (a drawing whose group stands elsewhere: the layer stack beside the lens).
   */
  label(text, position, cls, inGroup = false) {
    const obj = this.stage.label(text, position, cls);
    if (inGroup) {
      obj.removeFromParent();
      this.group.add(obj);
    }
    this.extras.push(obj);
    return obj;
  }

  /**
   * About how many pixels a scene unit takes once the stage has fitted the drawing: the container over
   * `span`, the whole drawing's extent when several objects share the stage (set by the caller), else
   * over its own `size` and a unit of margin on each side.
   */
  pixelsPerUnit() {
    const { container } = this.stage;
    const s = this.span ?? { width: this.size.width + 2, height: this.size.height + 2 };
    return Math.max(1, Math.min(container.clientWidth / s.width, container.clientHeight / s.height));
  }

  /** Screen pixels between the points [x, z] and [x2, z2] of the floor. */
  pixels([x, z], [x2, z2]) {
    const { camera, container } = this.stage;
    camera.updateMatrixWorld();
    const a = new THREE.Vector3(x, 0, z).project(camera);
    const b = new THREE.Vector3(x2, 0, z2).project(camera);
    return Math.hypot(((a.x - b.x) * container.clientWidth) / 2, ((a.y - b.y) * container.clientHeight) / 2);
  }

  clear() {
    this.extras = clearExtras(this.extras);
  }

  /**
   * Removes it for good: its resize observer stopped, its extras cleared, its group taken off the
   * scene, its cells and the geometries and materials in `owned` (the ones every update shares) freed.
   */
  dispose(owned) {
    this.resizer.disconnect();
    this.clear();
    this.group.removeFromParent();
    for (const o of this.mesh ? [this.mesh, ...owned] : owned) o.dispose();
    this.stage.requestRender();
  }
}
