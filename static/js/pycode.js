// Python source text for the NumPy panels: numbers and strings written so that a plain
// Python reads back exactly the values the page holds (JS's shortest round-trip form).

/** A number as Python reads it back exactly (−∞/NaN as NumPy names). */
export function pyNum(x) {
  if (x === null || x === undefined) return "-np.inf";
  if (Number.isNaN(x)) return "np.nan";
  if (!Number.isFinite(x)) return x > 0 ? "np.inf" : "-np.inf";
  return String(x); // JS's shortest round-trip form ("0.1", "1e-7", "1e+21") is valid Python too
}

/** A string literal (JSON's escaping is valid Python for any text). */
export function pyStr(s) {
  return JSON.stringify(String(s));
}

/** A list of strings. */
export function pyStrings(list) {
  return `[${list.map(pyStr).join(", ")}]`;
}

/** A matrix as a np.array(...) call, one row per line when it is long. */
export function pyMatrix(rows, indent = "    ") {
  const lines = rows.map((r) => `[${r.map(pyNum).join(", ")}]`);
  const flat = `np.array([${lines.join(", ")}])`;
  if (flat.length <= 90) return flat;
  return `np.array([\n${lines.map((l) => indent + l + ",").join("\n")}\n])`;
}
