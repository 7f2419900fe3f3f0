// Hands a file to the browser as a download: a Blob, a blob: URL and a link with `download`.

/** A file name made of safe characters only (user text never reaches the file system raw). */
export function fileName(...parts) {
  const stem = parts
    .filter((p) => p !== null && p !== undefined && p !== "")
    .map((p) => String(p).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, ""))
    .filter(Boolean)
    .join("-")
    .slice(0, 80);
  return stem || "attention";
}

export function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A canvas as a PNG Blob. */
export function pngBlob(canvas) {
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("the canvas could not be encoded"))), "image/png"),
  );
}
