"""Subset the fonts of the page's non-Latin languages to the characters their catalogs use.

The page serves its own fonts (no CDN): Noto Sans Arabic and Noto Sans SC (SIL Open Font License), from
npm's @fontsource packages (pinned in package-lock.json). Whole, Noto Sans SC is about 8 MB a weight;
the lesson's Chinese uses a few hundred characters, so each font is cut down (fontTools' subsetter) to
what static/i18n/<code>.json holds in that script, plus the digits and punctuation any number or
sentence may add, at regular (400) and bold (700) weight. The Arabic font keeps every shaping feature
(isolated, initial, medial and final forms, ligatures, mark positioning), so words join as they should.

Writes static/fonts/: <code>.css (one @font-face per weight, its unicode-range the characters kept, so
the browser uses the font only for them and the system's font for Latin text), the .woff2 files named
by a hash of their bytes, and each font's licence beside it. A language's style sheet is loaded only when
the page is in that language (static/js/i18n.js, app/web/languages.py).

`python scripts/fonts.py` (make's setup runs it); does nothing when the catalogs, the packages and this
script are as they were at the last run (static/fonts/.stamp).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fontTools import subset
from fontTools.merge import Merger
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = ROOT / "static" / "i18n"
OUT = ROOT / "static" / "fonts"
PACKAGES = ROOT / "node_modules" / "@fontsource"
WEIGHTS = (400, 700)


@dataclass(frozen=True)
class Script:
    package: str  # @fontsource/<package>
    family: str  # the page's name for it (app's own, so a system font of that name is never taken instead)
    first: str  # the package's subset tried before its numbered slices
    ranges: tuple[tuple[int, int], ...]  # the code points this font draws (the rest: the system's font)
    always: str  # kept whatever the catalog holds: what numbers and typed words may bring


ARABIC_DIGITS = "٠١٢٣٤٥٦٧٨٩٫٬٪"
SCRIPTS = {
    "ar": Script(
        package="noto-sans-arabic",
        family="A3D Noto Sans Arabic",
        first="arabic",
        ranges=((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
        always=ARABIC_DIGITS + "،؛؟\u061c\u0640" + "العربية",  # ALM (Intl's sign mark), tatweel; the menu's name
    ),
    "zh": Script(
        package="noto-sans-sc",
        family="A3D Noto Sans SC",
        first="chinese-simplified",
        # quotes and … drawn full width, CJK punctuation, ideographs (and extension A), full-width forms
        ranges=(
            (0x2018, 0x201D),
            (0x2026, 0x2026),
            (0x3000, 0x303F),
            (0x3400, 0x4DBF),
            (0x4E00, 0x9FFF),
            (0xFF00, 0xFFEF),
        ),
        always="，。、：；！？（）“”‘’《》「」…中文简体",  # and the language menu's name of Chinese
    ),
}


def wanted(code: str, script: Script) -> str:
    """The characters of `code`'s catalog that `script`'s font draws, with its `always` ones, sorted."""
    messages = json.loads((CATALOGS / f"{code}.json").read_text(encoding="utf-8"))
    used = set("".join(messages.values())) | set(script.always)
    inside = {c for c in used if any(lo <= ord(c) <= hi for lo, hi in script.ranges)}
    return "".join(sorted(inside))


def sources(script: Script, weight: int) -> list[Path]:
    """The package's files of one weight: its named subset first, then the numbered slices in order."""
    files = sorted((PACKAGES / script.package / "files").glob(f"{script.package}-*-{weight}-normal.woff2"))

    def order(path: Path) -> tuple[int, int, str]:
        part = path.name[len(script.package) + 1 : -len(f"-{weight}-normal.woff2")]
        if part == script.first:
            return (0, 0, part)
        return (1, int(part), part) if part.isdigit() else (2, 0, part)

    return sorted(files, key=order)


def subset_font(path: Path, chars: str) -> TTFont:
    options = subset.Options()
    options.layout_features = ["*"]  # every shaping feature: Arabic's joining forms, marks, ligatures
    options.hinting = False  # screens of today do not need the TrueType hints: smaller files
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6]  # the copyright and the names; the licence is beside the file
    options.notdef_outline = True
    font = TTFont(path)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    return font


def build_weight(script: Script, weight: int, chars: str) -> tuple[bytes, str]:
    """The subset font of one weight as WOFF2 bytes, and the characters it draws."""
    by_source: dict[Path, str] = {}
    left = set(chars)
    for path in sources(script, weight):
        cmap = TTFont(path, lazy=True).getBestCmap()
        found = "".join(sorted(c for c in left if ord(c) in cmap))
        if found:
            by_source[path] = found
            left -= set(found)
        if not left:
            break
    if left:
        print(f"fonts: {script.package} {weight} has no glyph for {''.join(sorted(left))!r}", file=sys.stderr)
    parts = [subset_font(path, found) for path, found in by_source.items()]
    if len(parts) == 1:
        font = parts[0]
    else:
        # a few characters live in the package's other slices: one font of them all (same design, same metrics)
        with tempfile.TemporaryDirectory() as tmp:
            names = []
            for i, part in enumerate(parts):
                part.flavor = None
                names.append(str(Path(tmp) / f"{i}.ttf"))
                part.save(names[-1])
            font = Merger().merge(names)
    font.flavor = "woff2"
    out = io.BytesIO()
    font.save(out)
    return out.getvalue(), "".join(sorted(set(chars) - left))


def unicode_range(chars: str) -> str:
    """'U+4E00-4E01, U+4E03' for the code points of `chars`."""
    points = sorted({ord(c) for c in chars})
    spans: list[list[int]] = []
    for p in points:
        if spans and p == spans[-1][1] + 1:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    return ", ".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in spans)


def stamp() -> str:
    """What the fonts are made from: the catalogs, the packages' versions and this script."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for code in sorted(SCRIPTS):
        h.update((CATALOGS / f"{code}.json").read_bytes())
        h.update((PACKAGES / SCRIPTS[code].package / "package.json").read_bytes())
    return h.hexdigest()


def made(job: tuple[str, int]) -> tuple[bytes, str]:
    """One font of the page (a language's code, a weight): build_weight's WOFF2 bytes and characters."""
    code, weight = job
    return build_weight(SCRIPTS[code], weight, wanted(code, SCRIPTS[code]))


def write(code: str, script: Script, weights: list[tuple[bytes, str]]) -> None:
    """A language's fonts (one per weight of WEIGHTS, in order), its style sheet and its licence."""
    for old in OUT.glob(f"{script.package}-*.woff2"):
        old.unlink()
    faces = []
    for weight, (data, drawn) in zip(WEIGHTS, weights, strict=True):
        name = f"{script.package}-{weight}-{hashlib.sha256(data).hexdigest()[:10]}.woff2"
        (OUT / name).write_bytes(data)
        faces.append(
            f'@font-face {{\n  font-family: "{script.family}";\n  font-style: normal;\n  font-weight: {weight};\n'
            f'  font-display: block;\n  src: url("{name}") format("woff2");\n'
            f"  unicode-range: {unicode_range(drawn)};\n}}\n"
        )
        print(f"fonts: {name}: {len(drawn)} characters, {len(data) / 1024:.1f} KB")
    header = (
        f"/* {script.family}: @fontsource/{script.package} subset to the characters of static/i18n/{code}.json"
        f" (scripts/fonts.py). SIL Open Font License 1.1: {script.package}-LICENSE.txt */\n"
    )
    (OUT / f"{code}.css").write_text(header + "".join(faces), encoding="utf-8")
    licence = PACKAGES / script.package / "LICENSE"
    (OUT / f"{script.package}-LICENSE.txt").write_text(licence.read_text(encoding="utf-8"), encoding="utf-8")


def main() -> int:
    if not PACKAGES.is_dir():
        print("fonts: node_modules/@fontsource is missing: run npm ci first", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    done = OUT / ".stamp"
    now = stamp()
    if done.exists() and done.read_text() == now and all((OUT / f"{c}.css").exists() for c in SCRIPTS):
        done.touch()  # make's target: newer than the catalogs it was made from
        return 0
    # one process a font: reading Noto Sans SC's large slice takes fontTools ~7 s a weight (its WOFF2 glyphs
    # are decoded in Python), so the weights are made side by side, Chinese's first (the longest)
    jobs = sorted(((code, weight) for code in SCRIPTS for weight in WEIGHTS), key=lambda job: job[0] != "zh")
    with ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        fonts = dict(zip(jobs, pool.map(made, jobs), strict=True))
    for code, script in SCRIPTS.items():
        write(code, script, [fonts[(code, weight)] for weight in WEIGHTS])
    done.write_text(now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
