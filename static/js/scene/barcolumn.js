// A column of bars, one row per item, each as long as its value (0 … 1) and coloured by it, with
// its words beside it: the chapter `inside`'s logit lens (a row per layer's output, level with the
// layer stack's rows, the row where the final answer first comes out on top outlined) and its next
// tokens before and after heads are switched off. Rows too close on screen to name them all are
// named where they change (and the marked row always).

import * as THREE from "three";
import { heatRgb } from "../format.js";
import { Drawing } from "./extras.js";

const LENGTH = 3; // the bar of the value 1
const ROW_PX = 20; // a label's height in pixels, and a little room
const CHAR_PX = 6.5; // a label's width per character, in pixels

export class BarColumn extends Drawing {
  constructor(stage) {
    super(stage, "bar-column");
    this.geometry = new THREE.BoxGeometry(1, 1, 1).translate(0.5, 0, 0); // grows to the right
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.6 });
    this.markMaterial = new THREE.LineBasicMaterial({ color: 0xd55e00 });
    this.size = { width: LENGTH + 2, height: 0 };
    this.span = null; // the whole drawing's extent (set by the caller when objects share the stage)
  }

  /** The labels placed again for the view's new size (Drawing's resize hook). */
  redraw(last) {
    this.update(...last);
  }

  /**
   * @param rows [{ value: 0 … 1, text, key }] from the bottom up; `key`: rows whose key differs from the
   *             row below are named first (the lens: where the guess changes)
   * @param opts { x0, y0, dy: row spacing, marked: a row's index or -1, title }
   */
  update(rows, opts = {}) {
    const { x0 = 0, y0 = 0, dy = 0.4, marked = -1, title = null } = opts;
    this.begin([rows, opts]);
    this.size = { width: LENGTH + 2, height: rows.length * dy };
    const unit = this.pixelsPerUnit();
    const bars = new THREE.InstancedMesh(this.geometry, this.material, Math.max(1, rows.length));
    bars.count = rows.length;
    const m = new THREE.Matrix4();
    const colour = new THREE.Color();
    const height = Math.min(0.8 * dy, 0.3);
    rows.forEach((r, i) => {
      m.makeScale(Math.max(0.02, r.value * LENGTH), height, 0.25);
      m.setPosition(x0, y0 + i * dy, 0);
      bars.setMatrixAt(i, m);
      bars.setColorAt(i, colour.setRGB(...heatRgb(r.value).map((v) => v / 255), THREE.SRGBColorSpace));
    });
    bars.name = "bars";
    this.keep(bars);
    if (marked >= 0) {
      const y = y0 + marked * dy;
      const h = height / 2 + 0.06;
      const a = x0 - 0.1;
      const b = x0 + LENGTH + 0.1;
      const box = [[a, y - h], [b, y - h], [b, y + h], [a, y + h], [a, y - h]].map(([x, yy]) => new THREE.Vector3(x, yy, 0.14));
      this.keep(new THREE.Line(new THREE.BufferGeometry().setFromPoints(box), this.markMaterial));
    }
    // which rows are named: the marked one, then where the key changes, then the rest, each only where
    // it stays clear of the rows named already
    const every = Math.max(1, Math.ceil(ROW_PX / Math.max(0.5, dy * unit)));
    const order = [...rows.keys()].sort((i, j) => rank(i) - rank(j) || i - j);
    function rank(i) {
      if (i === marked) return 0;
      return i === 0 || rows[i].key !== rows[i - 1].key ? 1 : 2;
    }
    const named = [];
    for (const i of order) {
      if (named.every((j) => Math.abs(i - j) >= every)) named.push(i);
    }
    for (const i of named) {
      const text = rows[i].text;
      const half = (text.length * CHAR_PX + 8) / 2 / unit; // a label is centred on its point: its left edge at the bar's end
      this.label(text, [x0 + LENGTH + 0.2 + half, y0 + i * dy, 0], `stage-label bar-label${i === marked ? " marked" : ""}`, true);
    }
    if (title) this.label(title, [x0 + LENGTH / 2, y0 + rows.length * dy + 0.2, 0], "stage-label ls-title", true);
    this.stage.requestRender();
  }

  dispose() {
    super.dispose([this.geometry, this.material, this.markMaterial]);
  }
}
