// Bundle and minify the page with esbuild (pinned in package-lock.json): one script (the page's
// modules and the parts of three.js they use) and one style sheet, named by a hash of their
// content, listed in static/dist/manifest.json for app/assets.py. `node scripts/build.mjs`.
// Entries that are not the page (e.g. the standalone viewer of the HTML export) are listed in EXTRA.
import { build } from "esbuild";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const staticDir = join(root, "static");
const out = join(staticDir, "dist");
const EXTRA = [["viewer", "js/export/standalone.js", "iife"]]; // built only when the file exists

// the style sheets, in the order the template lists them
const template = readFileSync(join(root, "templates/index.html"), "utf8");
const sheets = [...template.matchAll(/static\('(css\/[^']+\.css)'\)/g)].map((m) => m[1]);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
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
const manifest = {};

async function one(name, entry, format, extra = {}) {
  const result = await build({ ...common, ...extra, format, entryPoints: { [name]: entry }, outdir: out, entryNames: "[name]-[hash]" });
  for (const [file, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint || file.endsWith(".css")) manifest[file.endsWith(".css") ? `${name}.css` : `${name}.js`] = relative(staticDir, join(root, file));
  }
}

await one("app", join(staticDir, "js/main.js"), "esm");
const cssEntry = join(out, "_styles.css");
writeFileSync(cssEntry, sheets.map((s) => `@import "../${s}";`).join("\n"));
await one("styles", cssEntry, "esm", { loader: { ".css": "css" } });
rmSync(cssEntry);
for (const [name, entry, format] of EXTRA) {
  if (existsSync(join(staticDir, entry))) await one(name, join(staticDir, entry), format);
}
writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest, null, 1) + "\n");
console.log(manifest);
