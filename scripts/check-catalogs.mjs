// Check the message catalogs against English's, with the parser the page formats them with
// (intl-messageformat): every catalog has exactly English's keys; every message parses as ICU
// MessageFormat; each one has English's placeholders ({name}, {n, plural, …}, {mask, select, …})
// of the same kinds, the same select cases and the same tags (<kbd>…</kbd>); a plural has an
// `other` case; and it formats without error for sample values.
//
//   node scripts/check-catalogs.mjs [folder]          a line per problem; exit status 1 if any
//   node scripts/check-catalogs.mjs [folder] --json   {"problems": [...], "languages": {...}} (tests/test_i18n.py)
//
// folder: the catalogs' folder (default static/i18n); en.json is the source.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { IntlMessageFormat } from "intl-messageformat";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const json = args.includes("--json");
const folder = args.find((a) => !a.startsWith("--")) ?? join(root, "static", "i18n");
const LOCALES = { en: "en", es: "es", zh: "zh-Hans", ar: "ar" };
const KINDS = ["literal", "argument", "number", "date", "time", "select", "plural", "pound", "tag"];

/** name → kind and (select) its cases, tags, plurals without `other`, from a message's AST. */
function shape(ast, out = { args: {}, cases: {}, tags: new Set(), noOther: [] }) {
  for (const node of ast) {
    const kind = KINDS[node.type];
    if (kind === "tag") {
      out.tags.add(node.value);
      shape(node.children, out);
      continue;
    }
    if (kind === "literal" || kind === "pound") continue;
    // a name used both plainly and as a select (e.g. {mask} and {mask, select, …}) keeps its select kind
    const seen = out.args[node.value];
    if (!seen || seen === "argument") out.args[node.value] = kind;
    if (kind === "select") out.cases[node.value] = Object.keys(node.options).sort().join("|");
    if (kind === "plural" && !("other" in node.options)) out.noOther.push(node.value);
    for (const option of Object.values(node.options ?? {})) shape(option.value, out);
  }
  return out;
}

/** Values that exercise a message of this shape: a select's first case, numbers for plurals. */
function samples(s) {
  const values = {};
  for (const [name, kind] of Object.entries(s.args)) {
    if (kind === "plural" || kind === "number") values[name] = 2;
    else if (kind === "select") values[name] = s.cases[name].split("|")[0];
    else values[name] = "x";
  }
  for (const tag of s.tags) values[tag] = (chunks) => chunks.join("");
  return values;
}

const read = (code) => JSON.parse(readFileSync(join(folder, `${code}.json`), "utf8"));
const codes = readdirSync(folder)
  .filter((f) => f.endsWith(".json"))
  .map((f) => f.slice(0, -5))
  .sort();
const source = read("en");
const problems = [];
const languages = {};
const shapes = {};

for (const code of ["en", ...codes.filter((c) => c !== "en")]) {
  const messages = code === "en" ? source : read(code);
  languages[code] = Object.keys(messages).length;
  for (const key of Object.keys(source)) if (!(key in messages)) problems.push(`${code}: ${key}: missing (English has it)`);
  for (const key of Object.keys(messages)) if (!(key in source)) problems.push(`${code}: ${key}: not in English's catalog`);
  for (const [key, text] of Object.entries(messages)) {
    if (typeof text !== "string") {
      problems.push(`${code}: ${key}: not a string`);
      continue;
    }
    let s;
    try {
      const f = new IntlMessageFormat(text, LOCALES[code] ?? code);
      s = shape(f.getAst());
      f.format(samples(s));
    } catch (err) {
      problems.push(`${code}: ${key}: ${err.message.split("\n")[0]}`);
      continue;
    }
    // an ICU quote that swallows what follows it ('{ or '< ): a single quote meant as an apostrophe
    if (/'[{}<#|]/.test(text)) problems.push(`${code}: ${key}: a single quote before { } < # or | starts an ICU quote: write '' for an apostrophe`);
    for (const name of s.noOther) problems.push(`${code}: ${key}: {${name}, plural} has no "other" case`);
    if (code === "en") {
      shapes[key] = s;
      continue;
    }
    const want = shapes[key];
    if (!want) continue;
    const names = (x) => Object.entries(x.args).map(([n, k]) => `${n}:${k}`).sort().join(", ");
    if (names(s) !== names(want)) problems.push(`${code}: ${key}: placeholders {${names(s)}} differ from English's {${names(want)}}`);
    for (const [name, cases] of Object.entries(want.cases)) {
      if (s.cases[name] !== undefined && s.cases[name] !== cases) problems.push(`${code}: ${key}: {${name}, select} cases ${s.cases[name]} differ from English's ${cases}`);
    }
    const tags = (x) => [...x.tags].sort().join(", ");
    if (tags(s) !== tags(want)) problems.push(`${code}: ${key}: tags <${tags(s)}> differ from English's <${tags(want)}>`);
  }
}

if (json) console.log(JSON.stringify({ problems, languages }));
else {
  for (const p of problems) console.log(p);
  console.log(`${codes.length} catalogs, ${Object.keys(source).length} messages each in English's; ${problems.length} problems`);
}
process.exit(problems.length ? 1 : 0);
