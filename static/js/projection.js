// A drawing projection for the model's 32-dimensional vectors: PCA, computed here in the
// browser. It only decides where arrows point in the 3D view; no attention number is
// computed from it (the table and the arithmetic always use the API's full vectors).

/** Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations: { values, vectors (columns) }. */
export function symmetricEigen(matrix) {
  const n = matrix.length;
  const a = new Float64Array(n * n); // row-major: a[p * n + q]
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) a[i * n + j] = matrix[i][j];
  return jacobi(a, n);
}

/**
 * Cyclic Jacobi rotations on `a` (n × n, row-major, changed in place), in typed arrays: the same
 * operations in the same order as on nested arrays (the same bits), without their boxed rows.
 */
function jacobi(a, n) {
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 60; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q];
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p];
          const akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k];
          const aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p];
          const vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => a[j * n + j] - a[i * n + i]);
  return {
    values: order.map((i) => Math.max(0, a[i * n + i])),
    vectors: order.map((i) => Array.from({ length: n }, (_, k) => v[k * n + i])),
  };
}

/**
 * PCA of `rows` (each a vector of the same length), centred on their mean.
 * Returns { mean, components: [c1, c2], explained (0..1, share of the variance in the first
 * `dims` components), project(row) → [x, y] }.
 */
export function pca(rows, dims = 2) {
  const d = rows[0]?.length ?? 0;
  const n = rows.length;
  // (d,) sums in row order, as a reduce over the rows would add them
  const sum = new Float64Array(d);
  for (let r = 0; r < n; r++) {
    const row = rows[r];
    for (let j = 0; j < d; j++) sum[j] += row[j];
  }
  const mean = Array.from(sum, (s) => s / Math.max(1, n));
  const m = Float64Array.from(mean);
  const cov = new Float64Array(d * d); // (d, d) row-major, upper triangle accumulated
  const centred = new Float64Array(d);
  for (let r = 0; r < n; r++) {
    const row = rows[r];
    for (let j = 0; j < d; j++) centred[j] = row[j] - m[j];
    for (let i = 0; i < d; i++) {
      const di = centred[i];
      for (let j = i; j < d; j++) cov[i * d + j] += di * centred[j];
    }
  }
  for (let i = 0; i < d; i++) {
    for (let j = i; j < d; j++) {
      cov[i * d + j] /= Math.max(1, n - 1);
      cov[j * d + i] = cov[i * d + j];
    }
  }
  const { values, vectors } = jacobi(cov, d);
  const total = values.reduce((s, x) => s + x, 0);
  const components = vectors.slice(0, dims).map((c) => {
    // a fixed sign, so the picture does not flip between two equal answers
    let big = 0;
    for (const x of c) if (Math.abs(x) > Math.abs(big)) big = x;
    return big < 0 ? c.map((x) => -x) : c;
  });
  while (components.length < dims) components.push(new Array(d).fill(0));
  const explained = total > 0 ? values.slice(0, dims).reduce((s, x) => s + x, 0) / total : 1;
  const project = (row) =>
    components.map((c) => {
      let s = 0;
      for (let j = 0; j < d; j++) s += c[j] * (row[j] - m[j]);
      return s;
    });
  return { mean, components, explained, project };
}

/**
 * The 2-D drawing of a response: q and k by one PCA over the head's queries and keys
 * together, v and the output z by their own PCA (z is a weighted mean of the v, so it lands
 * where its blend of the v points). Vectors of 2 or fewer coordinates are drawn as they are.
 */
export function drawing(data) {
  const dk = data.q[0]?.length ?? 0;
  const dv = data.v[0]?.length ?? 0;
  const out = { q: data.q, k: data.k, v: data.v, output: data.output, qk: null, vz: null };
  if (dk > 2) {
    const p = pca([...data.q, ...data.k]);
    out.q = data.q.map(p.project);
    out.k = data.k.map(p.project);
    out.qk = p.explained;
  }
  if (dv > 2) {
    const p = pca(data.v);
    out.v = data.v.map(p.project);
    out.output = data.output.map(p.project);
    out.vz = p.explained;
  }
  return out;
}
