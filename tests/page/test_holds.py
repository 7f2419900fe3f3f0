"""Withholding lives in the page's store (issue 40): state.holds is the one record of why the
weights are held back, and state.withheld ({ reason }, what the page says) follows it in the same
action. Run in Node on a real state through the real store: a quiz and the teacher's H overlap,
each lifts only its own reason, and "quiz" is what the page says while a quiz waits."""

from __future__ import annotations

from tests.page.node import run_in_node

CHECK = """
import { actions } from "ACTIONS";
import { createState } from "STATE";
import { createStore } from "STORE";
const store = createStore(createState("the-cat-ate-its-fish"), actions);
const seen = [];
const step = (what, changed) => seen.push({ what, changed: changed !== false,
  holds: [...store.state.holds], withheld: store.state.withheld });
step("start", true);
step("numbers on", store.act.withhold("numbers", true));
step("quiz on", store.act.withhold("quiz", true));
step("quiz again", store.act.withhold("quiz", true));
step("quiz off", store.act.withhold("quiz", false));
step("teacher on", store.act.withhold("teacher", true));
step("numbers off", store.act.withhold("numbers", false));
step("teacher off", store.act.withhold("teacher", false));
step("teacher off again", store.act.withhold("teacher", false));
step("page quiz", store.act.withhold("quiz"));
step("hidden too", store.act.withhold("hidden"));
step("release", store.act.release());
step("release again", store.act.release());
console.log(JSON.stringify(seen));
"""


def test_the_store_holds_every_reason_and_says_the_first() -> None:
    out = run_in_node(CHECK, ACTIONS="actions.js", STATE="state.js", STORE="store.js")
    table = [(s["what"], s["changed"], s["holds"], (s["withheld"] or {}).get("reason")) for s in out]
    assert table == [
        ("start", True, [], None),
        ("numbers on", True, ["numbers"], "hidden"),
        ("quiz on", True, ["numbers", "quiz"], "quiz"),
        ("quiz again", False, ["numbers", "quiz"], "quiz"),
        ("quiz off", True, ["numbers"], "hidden"),
        ("teacher on", True, ["numbers", "teacher"], "hidden"),
        ("numbers off", True, ["teacher"], "hidden"),
        ("teacher off", True, [], None),
        ("teacher off again", False, [], None),
        ("page quiz", True, ["quiz"], "quiz"),
        ("hidden too", True, ["hidden", "quiz"], "quiz"),
        ("release", True, [], None),
        ("release again", False, [], None),
    ]
    assert all(s["withheld"] is None or set(s["withheld"]) == {"reason"} for s in out)  # the shape chapters read
