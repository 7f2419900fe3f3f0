// CSV of one array: rows are queries (or tokens), the header row names the columns (keys, or
// coordinates), 3-D arrays gain a leading `head` column. RFC 4180 quoting, and no cell of user text
// can become a spreadsheet formula (a leading = + - @, tab, CR or LF is escaped with an apostrophe,
// as OWASP advises); numbers are written as numbers. A word's cell is written exactly as the API's
// CSV writes it (app/export.py: cell_text, then Python's csv quoting).
import { arrayTable, numberText } from "./table-data.js";

const FORMULA = /^[=+\-@\t\r\n]/;

/** A text cell, safe for spreadsheets and for CSV parsers. */
export function textCell(s) {
  let t = String(s);
  if (FORMULA.test(t)) t = `'${t}`;
  return /[",\r\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

export function toCsv(answer, name) {
  const t = arrayTable(answer, name);
  const corner = t.square ? "query" : "token";
  const lines = [];
  const header = [corner, ...t.cols].map(textCell);
  const heads = t.heads ?? [t.matrix];
  lines.push((t.heads ? ["head", ...header] : header).join(","));
  heads.forEach((matrix, h) => {
    matrix.forEach((row, i) => {
      const cells = [textCell(t.rows[i]), ...row.map(numberText)];
      lines.push((t.heads ? [String(h), ...cells] : cells).join(","));
    });
  });
  return lines.join("\r\n") + "\r\n";
}
