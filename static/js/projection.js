// A drawing projection for the model's 32-dimensional vectors: PCA, computed here in the
// browser. It only decides where arrows point in the 3D view; no attention number is
// computed from it (the table and the arithmetic always use the API's full vectors).

/** Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations: { values, vectors (columns) }. */
export function symmetricEigen(matrix) {
  const n = matrix.length;
  const a = matrix.map((row) => row.slice());
  const v = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
  for (let sweep = 0; sweep < 60; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p][q] * a[p][q];
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        if (Math.abs(a[p][q]) < 1e-300) continue;
        const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k][p];
          const akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p][k];
          const aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k][p];
          const vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const order = a.map((row, i) => i).sort((i, j) => a[j][j] - a[i][i]);
  return {
    values: order.map((i) => Math.max(0, a[i][i])),
    vectors: order.map((i) => v.map((row) => row[i])),
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
  const mean = Array.from({ length: d }, (_, j) => rows.reduce((s, r) => s + r[j], 0) / Math.max(1, n));
  const cov = Array.from({ length: d }, () => new Array(d).fill(0));
  for (const r of rows) {
    for (let i = 0; i < d; i++) {
      const di = r[i] - mean[i];
      for (let j = i; j < d; j++) cov[i][j] += di * (r[j] - mean[j]);
    }
  }
  for (let i = 0; i < d; i++) for (let j = i; j < d; j++) cov[j][i] = cov[i][j] /= Math.max(1, n - 1);
  const { values, vectors } = symmetricEigen(cov);
  const total = values.reduce((s, x) => s + x, 0);
  const components = vectors.slice(0, dims).map((c) => {
    // a fixed sign, so the picture does not flip between two equal answers
    let big = 0;
    for (const x of c) if (Math.abs(x) > Math.abs(big)) big = x;
    return big < 0 ? c.map((x) => -x) : c;
  });
  while (components.length < dims) components.push(new Array(d).fill(0));
  const explained = total > 0 ? values.slice(0, dims).reduce((s, x) => s + x, 0) / total : 1;
  const project = (row) => components.map((c) => c.reduce((s, x, j) => s + x * (row[j] - mean[j]), 0));
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
