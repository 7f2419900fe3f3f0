// The page's words in the reader's language. One message catalog per language
// (static/i18n/<code>.json: flat keys → ICU MessageFormat messages; English is the source), formatted
// by intl-messageformat (plurals, placeholders, rich text by CLDR's rules); numbers in prose and
// tables by Intl.NumberFormat for the language. Code panels stay Python (pycode.js): never this.
//
// Which language: ?lang= in the address, else the one picked in the menu before (localStorage),
// else the browser's first language that has a catalog, else English. English's catalog is part of
// the page's bundle (a first visit pays nothing more); another one is fetched, with its fonts, only
// when it is the language shown. startLanguage() settles it before the page draws (main.js awaits
// it), so no module may call t() while it is being imported: only when it draws.
//
// Picking another language in the menu keeps it (localStorage, and a cookie so that the server
// writes the page's own words in it next time) and loads the page again in it: every part of the
// page is drawn once, in one language. A room's state has no words in it (state.js snapshot()), so
// each phone draws the teacher's view in its own language; `lang` is never part of a view.

import { IntlMessageFormat } from "intl-messageformat";
import en from "../i18n/en.json" with { type: "json" };

/** The languages with a catalog: `locale` for Intl and the document's lang, `dir`, `name` in itself. */
export const LANGUAGES = {
  en: { name: "English", locale: "en", dir: "ltr" },
  es: { name: "Español", locale: "es", dir: "ltr" },
  zh: { name: "中文（简体）", locale: "zh-Hans", dir: "ltr" },
  ar: { name: "العربية", locale: "ar", dir: "rtl" },
};
export const SOURCE_LANGUAGE = "en";
const STORE_KEY = "a3d.lang";
const COOKIE = "a3d_lang"; // read by the server (app/i18n.py) to write the page's own words
const MINUS = "\u2212";

// the page's language and its catalog: set once, before the page draws (startLanguage, useLanguage)
const current = { code: SOURCE_LANGUAGE, messages: en };
const compiled = new Map(); // key → IntlMessageFormat, made on first use

/** The language code of `tag` ("es-MX" → "es", "zh-Hant-TW" → "zh"), or null when there is no catalog. */
export function languageOf(tag) {
  const primary = String(tag ?? "").trim().toLowerCase().split(/[-_]/)[0];
  return Object.hasOwn(LANGUAGES, primary) ? primary : null;
}

function stored() {
  try {
    return window.localStorage.getItem(STORE_KEY);
  } catch {
    return null; // storage refused (private mode): the browser's language then
  }
}

/** The language the page should be in: ?lang=, the reader's earlier choice, the browser's, English. */
export function wantedLanguage(search = window.location.search, kept = stored(), browser = navigator.languages ?? [navigator.language]) {
  const asked = languageOf(new URLSearchParams(search).get("lang"));
  if (asked) return asked;
  const mine = languageOf(kept);
  if (mine) return mine;
  for (const tag of browser) {
    const found = languageOf(tag);
    if (found) return found;
  }
  return SOURCE_LANGUAGE;
}

/** The current language's code ("en", "es", "zh", "ar"). */
export const language = () => current.code;
/** Its locale for Intl and the document (zh → "zh-Hans"). */
export const locale = () => LANGUAGES[current.code].locale;
/** Its direction: "ltr" or "rtl". */
export const dir = () => LANGUAGES[current.code].dir;

/**
 * Use catalog `catalog` for language `lang` (the page does this once, in startLanguage; the exported
 * viewer with the catalog written into its file).
 */
export function useLanguage(lang, catalog) {
  current.code = Object.hasOwn(LANGUAGES, lang) ? lang : SOURCE_LANGUAGE;
  current.messages = current.code === SOURCE_LANGUAGE ? en : catalog;
  compiled.clear();
  numberFormats.clear();
}

/** The catalog in use (the standalone export writes it into its file). */
export const catalog = () => current.messages;

/**
 * The names of a message's plain {placeholders}, at any depth, but not those that also pick a plural's or
 * a select's case ({mask, select, causal {…} other {{mask} mask}}): the case is picked by the value as given.
 */
function plainArguments(ast, names = new Set(), keys = new Set()) {
  for (const node of ast) {
    if (node.type === 1) names.add(node.value); // {name}
    if (node.options) keys.add(node.value); // {name, select|plural, …}
    for (const option of Object.values(node.options ?? {})) plainArguments(option.value, names, keys);
    if (node.children) plainArguments(node.children, names, keys);
  }
  for (const key of keys) names.delete(key);
  return names;
}

function format(key) {
  let f = compiled.get(key);
  if (!f) {
    const text = Object.hasOwn(current.messages, key) ? current.messages[key] : en[key];
    if (text === undefined) throw new Error(`no message "${key}" in the catalogs`);
    f = new IntlMessageFormat(text, locale());
    f.plain = plainArguments(f.getAst());
    compiled.set(key, f);
  }
  return f;
}

/**
 * In a right-to-left language every text put into a sentence (a word, a number already written) is
 * isolated (U+2068 … U+2069): an English word or a minus sign then keeps its own direction and does
 * not pull the Arabic words or the punctuation around it out of place.
 */
function isolated(f, values) {
  if (!values || dir() !== "rtl") return values;
  const out = { ...values };
  for (const name of f.plain) if (typeof out[name] === "string" && out[name]) out[name] = `\u2068${out[name]}\u2069`;
  return out;
}

/** Whether the catalogs have message `key`. */
export const has = (key) => Object.hasOwn(en, key);

/** The message `key` with `values` filled in (numbers in them formatted for the language). */
export function t(key, values = undefined) {
  const f = format(key);
  return String(f.format(isolated(f, values)));
}

/**
 * A message with markup: each tag in it (<kbd>…</kbd>, <code>…</code>, <b>…</b>, <sub>…</sub>, and
 * <accent>…</accent> for a span.accent; app/i18n.py knows the same) becomes that element, its text
 * put in as text; returns the parts (strings and elements) for append().
 */
export function tNodes(key, values = {}) {
  const tag = (name, className = "") => (chunks) => {
    const node = document.createElement(name);
    if (className) node.className = className;
    node.append(...chunks);
    return node;
  };
  const tags = { kbd: tag("kbd"), code: tag("code"), b: tag("b"), sub: tag("sub"), accent: tag("span", "accent") };
  const f = format(key);
  const out = f.format({ ...tags, ...isolated(f, values) });
  return Array.isArray(out) ? out : [String(out)];
}

// ---- numbers -----------------------------------------------------------------------------

const numberFormats = new Map();

function numberFormat(min, max) {
  const id = `${min}:${max}`;
  let f = numberFormats.get(id);
  if (!f) {
    f = new Intl.NumberFormat(locale(), { minimumFractionDigits: min, maximumFractionDigits: max, useGrouping: false, signDisplay: "negative" });
    numberFormats.set(id, f);
  }
  return f;
}

/**
 * `x` with between `min` and `max` decimals in the language's digits and decimal sign, with a true
 * minus sign (U+2212) and never a "−0" (format.js keeps English's own toFixed form, byte for byte).
 */
export function decimal(x, min, max = min) {
  return numberFormat(min, max).format(x).replace(/-/g, MINUS);
}

/** A whole number (a count, a row's index) in the language's digits. */
export function integer(n) {
  return current.code === SOURCE_LANGUAGE ? String(n) : numberFormat(0, 0).format(n);
}

/** A whole number grouped as the language groups thousands ("46,080", "46.080", "46,080"), for bytes and sizes. */
export function grouped(n) {
  let f = numberFormats.get("grouped");
  if (!f) {
    f = new Intl.NumberFormat(locale(), { maximumFractionDigits: 0 });
    numberFormats.set("grouped", f);
  }
  return f.format(n);
}

/** A share (0.895) as a percentage with `digits` decimals, as the language writes one ("89,5 %", "٨٩٫٥٪"). */
export function percent(x, digits = 1) {
  const id = `%${digits}`;
  let f = numberFormats.get(id);
  if (!f) {
    f = new Intl.NumberFormat(locale(), { style: "percent", minimumFractionDigits: digits, maximumFractionDigits: digits, signDisplay: "negative" });
    numberFormats.set(id, f);
  }
  return f.format(x).replace(/-/g, MINUS);
}

/** Names joined as the language joins them: "heads and layers", "cabezas y capas", "头和层". */
export function andList(items) {
  return new Intl.ListFormat(locale(), { type: "conjunction" }).format(items);
}

/** A list of already formatted items: "a, b" (", " in English; "; " where the decimal sign is a comma). */
export function listOf(items) {
  return items.join(t("format.listSeparator"));
}

// ---- the page ------------------------------------------------------------------------------

/**
 * Settle the page's language before anything draws: fetch its catalog when it is not English (the
 * URL the server gave in #app's data-catalogs), then set the document's lang and dir and put the
 * template's words in it if the server wrote them in another language. A catalog that cannot be
 * fetched leaves the page in English (said in the console). `fetchCatalog(url)`: the page's one
 * door (api.js's apiGet, handed in by main.js: api.js itself speaks through this module's t()).
 */
export async function startLanguage(fetchCatalog) {
  const root = document.getElementById("app");
  const wanted = wantedLanguage();
  if (wanted !== SOURCE_LANGUAGE) {
    try {
      const urls = JSON.parse(root?.dataset.catalogs ?? "{}");
      useLanguage(wanted, await fetchCatalog(urls[wanted]));
    } catch (err) {
      console.warn(`the ${wanted} catalog could not be loaded; the page stays in English:`, err);
      useLanguage(SOURCE_LANGUAGE);
    }
  } else useLanguage(SOURCE_LANGUAGE);
  const html = document.documentElement;
  if (html.lang !== locale()) {
    html.lang = locale();
    translateDocument(document);
  }
  html.dir = dir();
  html.dataset.lang = current.code;
  setupMenu();
  await loadFonts(root);
}

// the app's own fonts of a script (scripts/fonts.py), by the name static/css/languages.css uses
const FONT_FAMILY = { ar: "A3D Noto Sans Arabic", zh: "A3D Noto Sans SC" };
const FONT_WAIT = 3000; // ms: at most this long before the page draws without its font (it swaps in later)

/**
 * The language's own fonts (Arabic, Chinese): their style sheet (when the server did not put it in
 * the page already), then both weights, loaded before the page draws: its measured layouts (the
 * projector view's fit) and canvas-drawn text then use them from the start.
 */
async function loadFonts(root) {
  const code = current.code;
  const family = FONT_FAMILY[code];
  const href = JSON.parse(root?.dataset.fonts ?? "{}")[code];
  if (!family || !href) return;
  let link = document.querySelector(`link[data-fonts="${code}"]`);
  const loaded = new Promise((resolve) => {
    if (link?.sheet) return resolve();
    if (!link) {
      link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = href;
      link.dataset.fonts = code;
      document.head.append(link);
    }
    link.addEventListener("load", resolve, { once: true });
    link.addEventListener("error", resolve, { once: true });
  });
  const sample = t("page.title");
  const ready = loaded.then(() => Promise.all([400, 700].map((w) => document.fonts.load(`${w} 16px "${family}"`, sample))));
  await Promise.race([ready.catch(() => {}), new Promise((resolve) => setTimeout(resolve, FONT_WAIT))]);
}

/** The font family for text drawn on a canvas in the page's language (the app's own font first). */
export function canvasFamily() {
  const own = FONT_FAMILY[current.code];
  return own ? `"${own}", system-ui, sans-serif` : "system-ui, sans-serif";
}

/**
 * The template's words (elements marked data-i18n="key", data-i18n-rich="key" for a message with
 * markup, data-i18n-attr="attribute:key;…") in the current language: used when the server wrote the
 * page in another one (its guess from the browser's header, where the reader picked otherwise).
 */
export function translateDocument(root) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll("[data-i18n-rich]")) node.replaceChildren(...tNodes(node.dataset.i18nRich));
  for (const node of root.querySelectorAll("[data-i18n-attr]")) {
    for (const pair of node.dataset.i18nAttr.split(";")) {
      const [attr, key] = pair.split(":");
      if (attr && key) node.setAttribute(attr.trim(), t(key.trim()));
    }
  }
}

/** Keep `lang` as the reader's choice (this browser, and the server's next page) and show the page in it. */
export function chooseLanguage(lang) {
  if (!Object.hasOwn(LANGUAGES, lang)) return;
  try {
    window.localStorage.setItem(STORE_KEY, lang);
  } catch {
    /* storage refused: the cookie and the address still carry it */
  }
  document.cookie = `${COOKIE}=${lang}; path=/; max-age=31536000; samesite=lax`;
  const url = new URL(window.location.href);
  // the address names the choice only when it named one before (a link someone shared)
  if (url.searchParams.has("lang")) url.searchParams.set("lang", lang);
  window.location.replace(url.pathname + url.search + url.hash);
}

/** The query string `query` with the address's ?lang= kept (the page rewrites its address as the view changes). */
export function withLang(query) {
  const lang = new URLSearchParams(window.location.search).get("lang");
  if (!lang) return query;
  const p = new URLSearchParams(query);
  p.set("lang", lang);
  return "?" + p.toString();
}

/** The language menu in the top bar (#language-select, written by the template). */
function setupMenu() {
  const select = document.getElementById("language-select");
  if (!select) return;
  select.value = current.code;
  select.addEventListener("change", () => chooseLanguage(select.value));
}
