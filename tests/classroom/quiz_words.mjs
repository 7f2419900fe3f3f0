// The class questions' words as a page writes them (static/js/classroom/quizwords.js), for
// tests/classroom/test_quiz_words.py: reads [{lang, quiz}] as JSON on stdin, writes for each the
// question's words ({text, options, grid, explain}) in that language, as JSON on stdout.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { useLanguage } from "../../static/js/i18n.js";
import { questionWords } from "../../static/js/classroom/quizwords.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const catalog = (code) => JSON.parse(readFileSync(join(root, "static", "i18n", `${code}.json`), "utf8"));
const asks = JSON.parse(readFileSync(0, "utf8"));
const out = asks.map(({ lang, quiz }) => {
  useLanguage(lang, lang === "en" ? undefined : catalog(lang));
  return questionWords(quiz);
});
process.stdout.write(JSON.stringify(out));
