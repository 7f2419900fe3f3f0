// Small geometry helpers shared by the scene objects: placing a unit cylinder or cone
// between two points in an instance matrix, and easing.

import * as THREE from "three";

const UP = new THREE.Vector3(0, 1, 0);
const _dir = new THREE.Vector3();
const _quat = new THREE.Quaternion();
const _scale = new THREE.Vector3();
const _pos = new THREE.Vector3();

/** Geometry of height 1 standing on the origin along +Y (so it can be stretched from a point). */
export function unitCylinder(radial = 16) {
  return new THREE.CylinderGeometry(1, 1, 1, radial, 1).translate(0, 0.5, 0);
}

export function unitCone(radial = 20) {
  return new THREE.ConeGeometry(1, 1, radial, 1).translate(0, 0.5, 0);
}

/** A matrix that stretches a unit, +Y-standing shape from `from` along `vec`, `radius` wide. */
export function stretch(matrix, from, vec, length, radius) {
  if (length < 1e-6 || radius <= 0) {
    return matrix.makeScale(0, 0, 0);
  }
  _dir.copy(vec).normalize();
  _quat.setFromUnitVectors(UP, _dir);
  _scale.set(radius, length, radius);
  _pos.copy(from);
  return matrix.compose(_pos, _quat, _scale);
}

export const HIDDEN = new THREE.Matrix4().makeScale(0, 0, 0);

export function easeInOut(t) {
  return t < 0.5 ? 2 * t * t : 1 - (-2 * t + 2) ** 2 / 2;
}

export function lerp(a, b, t) {
  return a + (b - a) * t;
}

/** The first two coordinates of a vector as a 3-D direction in the XY plane. */
export function planar(row, scale) {
  return new THREE.Vector3((row[0] ?? 0) * scale, (row[1] ?? 0) * scale, 0);
}
