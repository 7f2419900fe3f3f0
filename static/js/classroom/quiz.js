// The live quiz panel: "which word will this query attend to most?"
//   follower: one button per word; one tap, once; after the reveal, right or wrong and the counts
//   presenter: "n of m answered" while the class answers (the server sends no counts before the
//              reveal: they would steer whoever votes last), a Reveal button (the answer is the
//              argmax of the focused query's weights in the server's answer), then the counts as
//              bars, and an End button
// From "Ask the class" until the reveal every page withholds the weights (withhold.js).

import { el } from "../dom.js";
import { withhold } from "./withhold.js";

const quote = (w) => `“${w}”`;

/** The argmax of the focused query's weights in an API answer (a 2-D weights table), or null. */
export function answerOf(answer, focus) {
  const row = answer?.weights?.[focus];
  if (!Array.isArray(row) || !row.length || typeof row[0] !== "number") return null;
  let best = 0;
  row.forEach((w, j) => {
    if (w > row[best]) best = j;
  });
  return best;
}

export class QuizPanel {
  constructor({ mode, vote = null, reveal = null, end = null }) {
    this.mode = mode;
    this.voteFn = vote;
    this.quiz = null;
    this.choice = null;
    this.answered = 0;
    this.followers = 0;
    this.root = el("section", { className: `cr-quiz cr-quiz-${mode}`, "aria-live": "polite", dataset: { testid: "quiz" } });
    this.root.hidden = true;
    this.question = el("h2", { className: "cr-quiz-question", dataset: { testid: "quiz-question" } });
    this.words = el("div", { className: "cr-quiz-words", role: "group", "aria-label": "Words" });
    this.result = el("p", { className: "cr-quiz-result", role: "status", dataset: { testid: "quiz-result" } });
    this.root.append(this.question, this.words, this.result);
    if (mode === "presenter") {
      const actions = el("div", { className: "cr-quiz-actions" });
      this.revealButton = el("button", { type: "button", dataset: { testid: "quiz-reveal" } }, "Reveal the answer");
      this.revealButton.addEventListener("click", () => reveal());
      const endButton = el("button", { type: "button", dataset: { testid: "quiz-end" } }, "End the quiz");
      endButton.addEventListener("click", () => end());
      actions.append(this.revealButton, endButton);
      this.root.append(actions);
    }
  }

  show(quiz) {
    // while the class answers, every page holds the weights back (they would give the answer away)
    const open = Boolean(quiz) && !("answer" in quiz);
    document.body.classList.toggle("cr-quiz-open", open);
    withhold("quiz", open);
    if (!quiz) {
      this.quiz = null;
      this.root.hidden = true;
      return;
    }
    if (!this.quiz || this.quiz.id !== quiz.id) {
      this.choice = this.savedChoice(quiz.id);
      this.answered = 0;
    }
    this.quiz = quiz;
    this.root.hidden = false;
    this.root.dataset.quiz = quiz.id;
    this.root.dataset.revealed = String("answer" in quiz);
    this.question.textContent = `${quiz.question} The query: ${quote(quiz.tokens[quiz.focus])}`;
    this.draw(quiz.counts ?? null);
  }

  draw(counts) {
    const quiz = this.quiz;
    const revealed = "answer" in quiz;
    const total = counts ? counts.reduce((a, b) => a + b, 0) : 0;
    this.words.replaceChildren(
      ...quiz.tokens.map((word, j) => {
        const button = el("button", { type: "button", className: "cr-word", dataset: { testid: `quiz-word-${j}` } });
        button.append(el("span", { className: "cr-word-text" }, word));
        if (counts) {
          const share = total ? counts[j] / total : 0;
          const bar = el("span", { className: "cr-bar", dataset: { testid: `quiz-count-${j}` } }, String(counts[j]));
          bar.style.setProperty("--share", share.toFixed(3));
          button.append(bar);
        }
        if (revealed && j === quiz.answer) button.classList.add("cr-answer");
        if (j === this.choice) button.classList.add("cr-chosen");
        const canVote = this.mode === "follower" && !revealed && this.choice === null;
        button.disabled = !canVote;
        button.setAttribute("aria-pressed", String(j === this.choice));
        if (canVote) button.addEventListener("click", () => this.tap(j));
        return button;
      }),
    );
    if (this.mode === "presenter") {
      const of = Math.max(this.followers, this.answered);
      this.result.dataset.answered = String(revealed ? total : this.answered);
      this.result.textContent = revealed
        ? `Answer: ${quote(quiz.tokens[quiz.answer])}. ${counts?.[quiz.answer] ?? 0} of ${total} got it.`
        : `${this.answered} of ${of} answered.`;
      this.revealButton.disabled = revealed;
    } else if (revealed) {
      const right = this.choice === quiz.answer;
      this.result.dataset.verdict = this.choice === null ? "none" : right ? "right" : "wrong";
      this.result.textContent =
        this.choice === null
          ? `The answer: ${quote(quiz.tokens[quiz.answer])}.`
          : right
            ? `Right! ${quote(quiz.tokens[quiz.answer])} it is.`
            : `Not this time: the answer is ${quote(quiz.tokens[quiz.answer])} (you picked ${quote(quiz.tokens[this.choice])}).`;
    } else {
      this.result.dataset.verdict = "";
      this.result.textContent =
        this.choice === null ? "Tap one word." : `You picked ${quote(quiz.tokens[this.choice])}. Wait for the answer…`;
    }
  }

  tap(j) {
    if (!this.quiz || this.choice !== null) return;
    if (!this.voteFn(j, this.quiz.id)) {
      this.result.textContent = "Not connected: try again in a moment.";
      return;
    }
    this.choice = j;
    this.saveChoice(this.quiz.id, j);
    this.draw(null);
  }

  voted() {}

  error(msg) {
    if (this.quiz && msg) this.result.textContent = msg;
  }

  /** The presenter: how many have answered (the counts themselves come with the reveal). */
  progress(votes) {
    if (!this.quiz || votes?.id !== this.quiz.id || "answer" in this.quiz) return;
    this.answered = Number(votes.answered) || 0;
    this.draw(null);
  }

  /** The presenter: the room's followers (the "m" of "n of m answered"). */
  setFollowers(n) {
    this.followers = n;
    if (this.quiz && !("answer" in this.quiz)) this.draw(null);
  }

  savedChoice(id) {
    const v = sessionStorage.getItem(`a3d.vote.${id}`);
    return v === null ? null : Number(v);
  }

  saveChoice(id, j) {
    try {
      sessionStorage.setItem(`a3d.vote.${id}`, String(j));
    } catch {
      /* kept in memory only */
    }
  }
}
