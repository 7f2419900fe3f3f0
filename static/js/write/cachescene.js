// The KV cache in 3D: one row of keys and one row of values per token the model has read (the
// cache grows by one row per written token), and the newest token's query reaching back into
// every key row, each line as strong as its attention weight. There is nothing after the newest
// row to reach: the causal mask is the cache itself. Token 0's row is marked: the attention sink.

import * as THREE from "three";
import { t } from "../i18n.js";

const COLUMN = 6; // the whole cache is drawn this tall, however many rows it has
const ROW = 0.3; // a row's height while few rows fit
const K_X = -1.25;
const V_X = 1.25;
const WIDTH = 1.9;
const Q_X = -3.6;
const EMPTY = new THREE.Color(0xe4e2da);
const KEY = new THREE.Color(0x2f6fd0);
const VALUE = new THREE.Color(0x2e9b5f);
const QUERY = 0xd9480f;
const LEVELS = 32; // a row's shade (its weight) in this many steps: one material per step, kept

export class CacheScene {
  /** @param stage a Stage (static/js/scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "kv-cache";
    stage.root.add(this.group);
    this.rows = 0;
    // the materials, made once per shade and kept while the scene lives: made anew on every update
    // (every streamed token), the old ones' disposal let three.js drop their shader program, and it
    // compiled it again for the next frame
    this.materials = new Map();
  }

  /** The material of kind `kind` ("key", "value", "line", "query") at shade `w` in [0, 1]. */
  material(kind, w = 1) {
    const level = Math.round(Math.max(0, Math.min(1, w)) * (LEVELS - 1));
    const key = `${kind}:${level}`;
    let m = this.materials.get(key);
    if (!m) {
      const shade = level / (LEVELS - 1);
      if (kind === "line") m = new THREE.LineBasicMaterial({ color: QUERY, transparent: true, opacity: Math.min(1, 0.06 + shade) });
      else if (kind === "query") m = new THREE.MeshStandardMaterial({ color: QUERY });
      else m = new THREE.MeshStandardMaterial({ color: EMPTY.clone().lerp(kind === "key" ? KEY : VALUE, 0.15 + 0.85 * shade) });
      this.materials.set(key, m);
    }
    return m;
  }

  /**
   * Draw the cache for one written token.
   * @param {{rows: number, weights: number[]|null, sink: boolean}} v rows = kv_len; weights = the
   *   query's attention over the rows (null while withheld or before anything is written)
   */
  update({ rows, weights, sink }) {
    this.clear();
    this.rows = rows;
    if (!rows) return;
    const h = Math.min(ROW, COLUMN / rows);
    const y = (i) => -i * h;
    const geometry = new THREE.BoxGeometry(WIDTH, h * 0.82, 0.25);
    const top = weights ? Math.max(...weights) : 1;
    for (let i = 0; i < rows; i++) {
      const w = weights ? weights[i] / top : 0;
      for (const [x, kind] of [
        [K_X, "key"],
        [V_X, "value"],
      ]) {
        const box = new THREE.Mesh(geometry, this.material(kind, w));
        box.position.set(x, y(i), 0);
        box.userData = { row: i, kind };
        this.group.add(box);
      }
    }
    const last = y(rows - 1);
    if (weights) {
      const q = new THREE.Mesh(new THREE.SphereGeometry(Math.max(0.12, h * 0.45), 16, 12), this.material("query"));
      q.position.set(Q_X, last, 0);
      this.group.add(q);
      for (let i = 0; i < rows; i++) {
        const line = new THREE.Line(
          new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(Q_X, last, 0), new THREE.Vector3(K_X - WIDTH / 2, y(i), 0)]),
          this.material("line", weights[i] / top),
        );
        this.group.add(line);
      }
      this.group.add(this.stage.label(t("write.scene.query"), [Q_X - 0.9, last, 0], "stage-label wr-label-q"));
    }
    this.group.add(this.stage.label(t("write.scene.keys"), [K_X, 0.55, 0], "stage-label wr-label"));
    this.group.add(this.stage.label(t("write.scene.values"), [V_X, 0.55, 0], "stage-label wr-label"));
    if (sink && rows > 2) this.group.add(this.stage.label(t("write.scene.sink"), [Q_X + 0.6, 0, 0], "stage-label wr-label-sink"));
    this.stage.look([0, -COLUMN / 2 + 0.5, 13], [0, Math.min(-COLUMN / 2, last / 2) + 0.3, 0]);
    this.stage.reframe();
  }

  /** Take the rows away (their geometry with them; the kept materials stay for the next update). */
  clear() {
    this.group.traverse((o) => {
      if (o === this.group) return;
      o.geometry?.dispose();
      if (o.element) o.element.remove();
    });
    this.group.clear();
    this.stage.requestRender();
  }

  dispose() {
    this.clear();
    for (const m of this.materials.values()) m.dispose();
    this.materials.clear();
    this.group.removeFromParent();
  }
}
