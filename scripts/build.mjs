// Bundle and minify the page with esbuild (pinned in package-lock.json): one script (the page's
// modules and the parts of three.js they use) and one style sheet, named by a hash of their
// content, listed in static/dist/manifest.json for app/web/assets.py. `node scripts/build.mjs`.
// Entries that are not the page (e.g. the standalone viewer of the HTML export) are listed in EXTRA.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const staticDir = join(root, "static");
const out = join(staticDir, "dist");
const EXTRA = [["viewer", "js/export/standalone.js", "iife"]]; // built only when the file exists

// the style sheets, in the order the template lists them
const template = readFileSync(join(root, "templates/index.html"), "utf8");
const sheets = [...template.matchAll(/static\('(css\/[^']+\.css)'\)/g)].map((m) => m[1]);

// the sources' hash, as app/web/assets.py computes it: "path:sha256" lines sorted by path
function sourcesHash() {
  const files = [];
  const walk = (dir, ext) => {
    for (const e of readdirSync(join(staticDir, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel, ext);
      else if (e.name.endsWith(ext)) files.push(rel);
    }
  };
  walk("js", ".js");
  walk("css", ".css");
  walk("i18n", ".json"); // English's catalog is bundled (static/js/i18n.js); the others are fetched
  files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const sha = (data) => createHash("sha256").update(data).digest("hex");
  return sha(files.map((f) => `${f}:${sha(readFileSync(join(staticDir, f)))}\n`).join(""));
}
const sources = sourcesHash();

mkdirSync(out, { recursive: true }); // earlier builds stay a while: a page loaded before this build still finds its files
const common = {
  bundle: true,
  minify: true,
  sourcemap: false,
  target: ["es2022"],
  legalComments: "none",
  logLevel: "warning",
  metafile: true,
  absWorkingDir: root,
};
const manifest = { sources };

async function one(name, entry, format, extra = {}) {
  const result = await build({ ...common, ...extra, format, entryPoints: { [name]: entry }, outdir: out, entryNames: "[name]-[hash]" });
  for (const [file, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint || file.endsWith(".css")) manifest[file.endsWith(".css") ? `${name}.css` : `${name}.js`] = relative(staticDir, join(root, file));
  }
}

await one("app", join(staticDir, "js/main.js"), "esm");
const cssEntry = join(out, `_styles-${process.pid}.css`);
writeFileSync(cssEntry, sheets.map((s) => `@import "../${s}";`).join("\n"));
await one("styles", cssEntry, "esm", { loader: { ".css": "css" } });
rmSync(cssEntry);
for (const [name, entry, format] of EXTRA) {
  if (existsSync(join(staticDir, entry))) await one(name, join(staticDir, entry), format);
}
const tmp = join(out, `manifest.json.${process.pid}`);
writeFileSync(tmp, JSON.stringify(manifest, null, 1) + "\n");
renameSync(tmp, join(out, "manifest.json")); // atomic: a server never reads half a manifest
// prune files of builds older than an hour
const keep = new Set(Object.values(manifest).map((f) => f.replace(/^dist\//, "")));
for (const f of readdirSync(out)) {
  const path = join(out, f);
  if (f !== "manifest.json" && !keep.has(f) && Date.now() - statSync(path).mtimeMs > 3600_000) rmSync(path, { force: true });
}
console.log(manifest);
