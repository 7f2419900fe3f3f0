"""Take the projector view's screenshots for docs/screenshots/ (not a test): every chapter at
1280×720 and 1920×1080, then a lesson's quiz: the projector and the teacher's window (both sizes)
while the class answers, a follower's phone (390×844) while it waits, after the reveal and on a
cell question, the class report. Start the server with ATTENTION_PUBLIC_URL=http://192.168.1.20:8000
for the address a LAN would give. Each view opens a room: past 100 open rooms, restart the server
with a fresh ATTENTION_DATA_DIR.

    ATTENTION_TEACHER_TOKEN=T .venv/bin/uvicorn app.main:app --port 8123 &
    .venv/bin/python -m tests.browser.classroom_screenshots http://127.0.0.1:8123 T docs/screenshots [chapter…]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

# a teacher's own sentence of 33 tokens: the projector shows 7 rows and columns of its table, 16 of its words in 3D
LONG = (
    "the+quick+brown+fox+jumps+over+the+lazy+dog+while+the+cat+sleeps+on+the+warm+mat"
    "+and+the+bird+sings+a+song+in+the+old+tall+tree+by+the+river"
)
# chapter, step (None: its first), the query's extra parameters; the file is projector-CHAPTER-WIDTH.png
VIEWS: list[tuple[str, str | None, str]] = [
    ("rnn", None, ""),
    ("projections", None, ""),
    ("steps", "mix", "&example=the-cat-ate-its-fish&focus=3"),
    ("scaling", None, ""),
    ("masks", "difference", ""),
    ("heads", None, ""),
    ("positions", None, ""),
    ("block", None, ""),
    ("mistakes", None, ""),
    ("writing", None, "&n=6"),
    ("today", None, ""),
    ("sentence", "softmax", f"&sentence={LONG}&focus=12"),  # chapter steps: projector-sentence-WIDTH.png
]
SIZES = [(1280, 720), (1920, 1080)]


def main(base: str, token: str, out: Path, only: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for chapter, step, extra in VIEWS:
            if only and chapter not in only:
                continue
            for width, height in SIZES:
                page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce")
                shown = "steps" if chapter == "sentence" else chapter
                query = f"?token={token}&present=1&chapter={shown}" + (f"&step={step}" if step else "") + extra
                page.goto(base + "/" + query)
                page.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
                page.wait_for_selector('[data-testid="join-qr"]')
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"projector-{chapter}-{width}.png"))
                print(out / f"projector-{chapter}-{width}.png")
                page.close()
        if not only or "quiz" in only:
            quiz(browser, base, token, out)
        browser.close()


def quiz(browser: Any, base: str, token: str, out: Path) -> None:
    """The ready-made lesson played from the teacher's window, a question on the projector and three phones."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    projector = context.new_page()
    projector.goto(f"{base}/?token={token}")
    projector.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
    with context.expect_page() as opened:
        projector.get_by_test_id("present").click()
    teacher = opened.value
    teacher.set_viewport_size({"width": 1280, "height": 720})
    projector.wait_for_selector('[data-testid="join-code"]')
    code = projector.get_by_test_id("join-code").inner_text()
    teacher.wait_for_selector('[data-testid="teacher-status"]:has-text("● live")')
    phones = []
    for _ in range(3):
        phone = browser.new_page(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
        phone.goto(f"{base}/?room={code}")
        phone.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')
        phones.append(phone)
    projector.wait_for_selector('[data-testid="follower-count"][data-count="3"]')
    projector.get_by_test_id("join-fold").click()
    # the ready-made lesson, from the teacher's window, to its softmax view (view 5)
    teacher.locator("[data-testid=lessons] summary").click()
    teacher.wait_for_selector("[data-testid=lesson-select] option", state="attached")
    teacher.get_by_test_id("lesson-play").click()
    teacher.wait_for_selector('[data-testid=lesson-playing][data-index="0"]')
    for i in range(1, 5):
        teacher.keyboard.press("PageDown")
        teacher.wait_for_selector(f'[data-testid=lesson-playing][data-index="{i}"]')
    for page in (teacher, projector, *phones):
        page.wait_for_selector('#app[data-ready="true"][data-step="softmax"]', timeout=60_000)
    teacher.wait_for_selector('[data-testid="quiz-ask"][data-question="steps.share"]:not([disabled])')
    teacher.get_by_test_id("quiz-ask").click()
    for phone, option in zip(phones, (3, 0, 3), strict=True):
        phone.get_by_test_id(f"quiz-option-{option}").click()
        phone.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
    projector.wait_for_selector('[data-testid="quiz-result"][data-answered="3"]')
    teacher.wait_for_selector('[data-testid="quiz-result"][data-answered="3"]')
    for width, height in SIZES:
        for page in (projector, teacher):
            page.set_viewport_size({"width": width, "height": height})
        projector.wait_for_timeout(1200)
        projector.screenshot(path=str(out / f"classroom-projector-quiz-{width}.png"))
        teacher.screenshot(path=str(out / f"classroom-teacher-{width}.png"))
    for page in (projector, teacher):
        page.set_viewport_size({"width": 1280, "height": 720})
    phones[0].wait_for_timeout(500)
    phones[0].screenshot(path=str(out / "classroom-follower-phone-quiz.png"))
    teacher.get_by_test_id("quiz-reveal").click()
    phones[1].wait_for_selector('[data-testid="quiz-result"][data-verdict="wrong"]')
    projector.wait_for_timeout(1200)
    projector.screenshot(path=str(out / "classroom-projector-revealed-1280.png"))
    phones[1].wait_for_timeout(500)
    phones[1].screenshot(path=str(out / "classroom-follower-phone.png"))
    teacher.get_by_test_id("quiz-end").click()
    teacher.wait_for_selector('[data-testid="quiz"]', state="hidden")
    # a cell question: the masks chapter's first step
    teacher.get_by_test_id("lesson-stop").click()
    teacher.evaluate(
        """() => document.dispatchEvent(new CustomEvent('attention:apply', { detail: {
            chapter: 'masks', step: 'full', example: 'the-cat-ate-its-fish', mask: 'full', focus: '1' } }))"""
    )
    for page in (teacher, *phones):
        page.wait_for_selector('#app[data-ready="true"][data-chapter="masks"][data-step="full"]', timeout=60_000)
    teacher.wait_for_selector('[data-testid="quiz-ask"][data-question="masks.zero"]:not([disabled])')
    teacher.get_by_test_id("quiz-ask").click()
    phones[2].get_by_test_id("quiz-option-9").click()  # cat → fish
    phones[2].wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
    phones[2].screenshot(path=str(out / "classroom-follower-phone-cell.png"))
    teacher.get_by_test_id("quiz-reveal").click()
    teacher.get_by_test_id("quiz-end").click()
    teacher.wait_for_selector('[data-testid="quiz"]', state="hidden")
    teacher.locator("[data-testid=room-menu] summary").click()
    teacher.wait_for_selector('[data-testid="class-report-row-2"]')
    teacher.wait_for_timeout(300)
    teacher.screenshot(path=str(out / "classroom-room-menu-1280.png"))
    for page in (*phones,):
        page.close()
    context.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:])
