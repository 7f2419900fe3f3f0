// The live quiz panel: a question about the class's view, asked by the teacher, answered on every phone.
//
// The server sends the question (its text, its kind and its options: words, ranges, numbers, or a
// table's cells) and keeps the answer until the reveal (app/classroom/questions.py computes it).
//   follower   one button per option (a cell question: a grid); a tap sends the option's number and
//              waits for the server's word: counted ("voted"), or refused with the reason shown here
//              (too late, answered already, too many phones on this network, …). After the reveal the
//              verdict comes from the vote the server confirmed, so it always agrees with the counts.
//   presenter  the projector and the teacher's window: "n of m answered" while the class answers (no
//              counts before the reveal: they would steer whoever votes last), Reveal and End, then the
//              answer, the counts as bars and the sentence that explains the answer.
// From "Ask the class" until the reveal every page withholds the weights (withhold.js).
//
// Every page writes the question in its own language (quizwords.js: the server sends its sentences as
// catalog messages with their values), and this panel's own words are the catalog's "quiz.…" messages.

import { el } from "../dom.js";
import { locale, t } from "../i18n.js";
import { questionWords } from "./quizwords.js";
import { withhold } from "./withhold.js";

const quote = (w) => t("format.quote", { text: w });
const REFUSALS = new Set(["no_quiz", "revealed", "seat_cap"]); // the server's refusals the catalogs word (quiz.refused.<type>)

/** The options a quiz marks right (an index list; a cell question may have several). */
const rightOf = (quiz) => quiz?.answer?.right ?? [];

export class QuizPanel {
  constructor({ mode, vote = null, reveal = null, end = null, changed = () => {} }) {
    this.mode = mode;
    this.voteFn = vote;
    this.changed = changed; // told when the quiz opens, is revealed or ends (the presenter's tools follow)
    this.quiz = null;
    this.choice = null; // the option the server counted for this page (followers)
    this.pending = null; // the option tapped, waiting for the server's answer
    this.note = ""; // why the last vote was refused
    this.answered = 0;
    this.followers = 0;
    this.root = el("section", { className: `cr-quiz cr-quiz-${mode}`, "aria-live": "polite", dataset: { testid: "quiz" } });
    this.root.hidden = true;
    this.question = el("h2", { className: "cr-quiz-question", dataset: { testid: "quiz-question" } });
    this.options = el("div", { className: "cr-quiz-words", role: "group", "aria-label": t("quiz.options") });
    this.result = el("p", { className: "cr-quiz-result", role: "status", dataset: { testid: "quiz-result" } });
    this.explain = el("p", { className: "cr-quiz-explain", dataset: { testid: "quiz-explain" } });
    // a phone shows its verdict first (the sheet may scroll); the projector, the answers first
    if (mode === "follower") this.root.append(this.question, this.result, this.explain, this.options);
    else this.root.append(this.question, this.options, this.result, this.explain);
    if (mode === "presenter") {
      const actions = el("div", { className: "cr-quiz-actions" });
      this.revealButton = el("button", { type: "button", dataset: { testid: "quiz-reveal" } }, t("quiz.reveal"));
      this.revealButton.addEventListener("click", () => reveal());
      const endButton = el("button", { type: "button", dataset: { testid: "quiz-end" } }, t("quiz.end"));
      endButton.addEventListener("click", () => end());
      actions.append(this.revealButton, endButton);
      this.root.append(actions);
    }
  }

  get open() {
    return Boolean(this.quiz) && !("answer" in this.quiz);
  }

  show(quiz) {
    // while the class answers, every page holds the weights back (they would give the answer away)
    const open = Boolean(quiz) && !("answer" in quiz);
    document.body.classList.toggle("cr-quiz-open", open);
    withhold("quiz", open); // every chapter draws again without (or with) what the question is about
    if (!quiz) {
      this.quiz = null;
      this.root.hidden = true;
      this.changed(null);
      return;
    }
    if (!this.quiz || this.quiz.id !== quiz.id) {
      this.choice = null;
      this.pending = null;
      this.note = "";
      this.answered = 0;
    }
    this.quiz = quiz;
    this.root.hidden = false;
    this.root.dataset.quiz = quiz.id;
    this.root.dataset.kind = quiz.kind;
    this.root.dataset.revealed = String("answer" in quiz);
    this.words = questionWords(quiz);
    this.question.textContent = this.words.text;
    this.draw();
    this.changed(quiz);
  }

  draw() {
    const quiz = this.quiz;
    if (!quiz) return;
    const words = this.words;
    const revealed = "answer" in quiz;
    const counts = revealed ? (quiz.counts ?? null) : null;
    const total = counts ? counts.reduce((a, b) => a + b, 0) : 0;
    const right = new Set(rightOf(quiz));
    const canVote = this.mode === "follower" && !revealed && this.choice === null && this.pending === null;
    const option = (j, label, tag = "button") => {
      const button = el("button", {
        type: "button",
        className: tag === "cell" ? "cr-cell" : "cr-word",
        dataset: { testid: `quiz-option-${j}` },
        "aria-label": label,
      });
      if (tag !== "cell") button.append(el("span", { className: "cr-word-text" }, label));
      if (counts) {
        const bar = el("span", { className: "cr-bar", dataset: { testid: `quiz-count-${j}` } }, String(counts[j]));
        bar.style.setProperty("--share", (total ? counts[j] / total : 0).toFixed(3));
        button.append(bar);
      }
      if (revealed && right.has(j)) button.classList.add("cr-answer");
      const mine = j === (this.choice ?? this.pending);
      if (mine) button.classList.add("cr-chosen");
      button.disabled = !canVote;
      button.setAttribute("aria-pressed", String(mine));
      if (canVote) button.addEventListener("click", () => this.tap(j));
      return button;
    };
    if (quiz.kind === "cell" && words.grid) {
      const { rows, cols } = words.grid;
      const table = el("table", { className: "cr-grid", dataset: { testid: "quiz-grid" } });
      table.append(el("caption", {}, t("quiz.grid")));
      const head = el("tr");
      head.append(el("th", { scope: "col" }, ""), ...cols.map((c) => el("th", { scope: "col" }, c)));
      table.append(head);
      rows.forEach((r, i) => {
        const tr = el("tr");
        tr.append(el("th", { scope: "row" }, r));
        cols.forEach((_, k) => {
          const td = el("td");
          td.append(option(i * cols.length + k, words.options[i * cols.length + k], "cell"));
          tr.append(td);
        });
        table.append(tr);
      });
      this.options.replaceChildren(table);
    } else {
      this.options.replaceChildren(...words.options.map((label, j) => option(j, label)));
    }
    this.explain.textContent = words.explain;
    this.explain.hidden = !revealed;
    const named = (j) => quote(words.options[j]);
    const answerText = () => {
      const names = [...right].slice(0, 3).map(named);
      if (right.size > 3) return t("quiz.more", { list: names.join(t("format.listSeparator")) });
      return new Intl.ListFormat(locale(), { type: "disjunction" }).format(names); // “a” or “b”
    };
    if (this.mode === "presenter") {
      const of = Math.max(this.followers, this.answered);
      const got = counts ? [...right].reduce((s, j) => s + (counts[j] ?? 0), 0) : 0;
      this.result.dataset.answered = String(revealed ? total : this.answered);
      this.result.textContent = revealed ? t("quiz.answer", { answer: answerText(), got, total }) : t("quiz.answered", { answered: this.answered, of });
      this.revealButton.disabled = revealed;
      return;
    }
    if (revealed) {
      const picked = this.choice;
      const ok = picked !== null && right.has(picked);
      this.result.dataset.verdict = picked === null ? "none" : ok ? "right" : "wrong";
      const verdict =
        picked === null
          ? t("quiz.verdict.none", { answer: answerText() })
          : ok
            ? t("quiz.verdict.right", { picked: named(picked) })
            : t("quiz.verdict.wrong", { answer: answerText(), picked: named(picked) });
      this.result.textContent = this.note && picked === null ? `${verdict} ${t("quiz.why", { why: this.note })}` : verdict;
      return;
    }
    this.result.dataset.verdict = this.choice !== null ? "counted" : this.pending !== null ? "pending" : this.note ? "refused" : "";
    if (this.choice !== null) this.result.textContent = t("quiz.counted", { picked: named(this.choice) });
    else if (this.pending !== null) this.result.textContent = t("quiz.sending", { picked: named(this.pending) });
    else if (this.note) this.result.textContent = this.note;
    else this.result.textContent = t("quiz.tap", { kind: quiz.kind });
  }

  tap(j) {
    if (!this.quiz || this.choice !== null || this.pending !== null) return;
    if (!this.voteFn(j, this.quiz.id)) {
      this.note = t("quiz.refused.offline");
      this.draw();
      return;
    }
    this.pending = j;
    this.note = "";
    this.draw();
  }

  /** The server counted this page's vote (`voted`, or a reconnecting page's hello: `yours`). */
  voted(v) {
    if (!this.quiz || v?.quiz !== this.quiz.id) return;
    this.choice = Number(v.choice);
    this.pending = null;
    this.note = "";
    this.draw();
  }

  /** The server refused this page's vote: say why (it may tell the vote it counted before). */
  error(e) {
    if (!this.quiz || !e) return;
    if (e.type === "voted" && Number.isInteger(e.choice) && (e.quiz ?? this.quiz.id) === this.quiz.id) {
      this.voted({ quiz: this.quiz.id, choice: e.choice });
      return;
    }
    if (e.type === "read_only" || e.type === "json") return;
    this.pending = null;
    this.note = refusal(e);
    this.draw();
  }

  /** The presenter: how many have answered (the counts themselves come with the reveal). */
  progress(votes) {
    if (!this.quiz || votes?.id !== this.quiz.id || "answer" in this.quiz) return;
    this.answered = Number(votes.answered) || 0;
    this.draw();
  }

  /** The presenter: the room's followers (the "m" of "n of m answered"). */
  setFollowers(n) {
    this.followers = n;
    if (this.open) this.draw();
  }
}

/**
 * Why the server did not count a vote, in this page's language: its catalog message by the refusal's
 * type (a vote of this address counted before: "voted" without a choice of this page's), else the
 * server's own words, else a general one.
 */
function refusal(e) {
  if (REFUSALS.has(e.type)) return t(`quiz.refused.${e.type}`, { most: Number(e.most) || 0 });
  if (e.type === "voted") return t("quiz.refused.address");
  return e.msg || t("quiz.refused.other");
}
