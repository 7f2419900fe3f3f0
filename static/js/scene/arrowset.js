// A set of 3-D arrows (shaft + head) drawn with two InstancedMeshes. Each arrow has an
// origin, a vector and a colour, and animates from its last drawn vector to a new one.

import * as THREE from "three";
import { HIDDEN, lerp, stretch, unitCone, unitCylinder } from "./geometry.js";

const _m = new THREE.Matrix4();
const _v = new THREE.Vector3();
const _tip = new THREE.Vector3();

export class ArrowSet {
  constructor(capacity, { shaft = 0.07, head = 0.19, headLength = 0.36 } = {}) {
    this.capacity = capacity;
    this.dims = { shaft, head, headLength };
    const material = new THREE.MeshStandardMaterial({ roughness: 0.45, metalness: 0.0 });
    this.shafts = new THREE.InstancedMesh(unitCylinder(), material, capacity);
    this.heads = new THREE.InstancedMesh(unitCone(), material, capacity);
    for (const mesh of [this.shafts, this.heads]) {
      mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
      mesh.setColorAt(0, new THREE.Color(1, 1, 1)); // colours from the start: the shader compiled ahead (view.js) is the one drawn
      mesh.count = 0;
      mesh.frustumCulled = false;
    }
    this.group = new THREE.Group();
    this.group.add(this.shafts, this.heads);
    this.from = []; // per arrow: { origin, vec } at the start of the transition
    this.to = [];
    this.shown = [];
  }

  /** arrows: [{ origin: Vector3, vec: Vector3, colour: number }] */
  set(arrows) {
    const n = Math.min(arrows.length, this.capacity);
    this.from = this.to.length === n ? this.shown.map((a) => ({ origin: a.origin.clone(), vec: a.vec.clone() })) : null;
    this.to = arrows.slice(0, n);
    if (!this.from) this.from = this.to.map((a) => ({ origin: a.origin.clone(), vec: new THREE.Vector3() }));
    this.shown = this.to.map((a) => ({ origin: a.origin.clone(), vec: a.vec.clone() }));
    const colour = new THREE.Color();
    for (let i = 0; i < n; i++) {
      colour.setHex(this.to[i].colour);
      this.shafts.setColorAt(i, colour);
      this.heads.setColorAt(i, colour);
    }
    this.shafts.count = n;
    this.heads.count = n;
    for (const mesh of [this.shafts, this.heads]) if (mesh.instanceColor) mesh.instanceColor.needsUpdate = true;
    this.tick(0);
  }

  tick(t) {
    const { shaft, head, headLength } = this.dims;
    for (let i = 0; i < this.to.length; i++) {
      const a = this.from[i];
      const b = this.to[i];
      const origin = this.shown[i].origin.lerpVectors(a.origin, b.origin, t);
      const vec = this.shown[i].vec.lerpVectors(a.vec, b.vec, t);
      const length = vec.length();
      if (length < 1e-4) {
        this.shafts.setMatrixAt(i, HIDDEN);
        this.heads.setMatrixAt(i, HIDDEN);
        continue;
      }
      const hl = Math.min(headLength, length * 0.5);
      const scale = lerp(0.6, 1, Math.min(1, length / 0.6)); // thin short arrows a little
      this.shafts.setMatrixAt(i, stretch(_m, origin, vec, length - hl, shaft * scale));
      _tip.copy(vec).setLength(length - hl).add(origin);
      _v.copy(vec);
      this.heads.setMatrixAt(i, stretch(_m, _tip, _v, hl, head * scale));
    }
    this.shafts.instanceMatrix.needsUpdate = true;
    this.heads.instanceMatrix.needsUpdate = true;
  }

  dispose() {
    this.group.removeFromParent();
    this.shafts.geometry.dispose();
    this.heads.geometry.dispose();
    this.shafts.material.dispose();
    this.shafts.dispose();
    this.heads.dispose();
  }
}
