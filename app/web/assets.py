"""Static files with URLs that change when the file changes, and the page's import map.

Every URL the page uses carries ?v=<hash of the file>, so after an upgrade no classroom browser
keeps running stale JavaScript; versioned URLs are cached for a year.

The page is served as a bundle (static/dist/, made by scripts/build.mjs with esbuild: one minified
script with the parts of three.js it uses, one style sheet) whenever the bundle was built from the
sources as they are now: its manifest records a hash of every source module and style sheet. When
a source has changed since (a checkout being edited), the page is served from its sources instead,
ES modules finding each other through an import map, so it is never stale.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send


def _find(name: str) -> Path:
    """templates/ and static/ next to the package `app` (a source checkout) or inside it (a wheel)."""
    here = Path(__file__).resolve().parent.parent  # app/
    for base in (here, here.parent):
        if (base / name).is_dir():
            return base / name
    raise RuntimeError(f"cannot find the {name}/ folder near {here}")


STATIC_DIR = _find("static")
TEMPLATES_DIR = _find("templates")
THREE_ADDONS = "vendor/three/addons"
# what the bundle is built from (scripts/build.mjs hashes the same): English's catalog is inside it
SOURCES = ("js/**/*.js", "css/**/*.css", "i18n/*.json")
MESSAGE_FORMAT = "vendor/intl-messageformat/intl-messageformat.js"  # scripts/vendor.sh bundles it from npm


class Bundle(NamedTuple):
    """Versioned URLs of the built page: its script, its style sheet, and the export's viewer.
    fresh: built from the sources as they are now (else only the viewer and styles are used)."""

    app: str
    styles: str
    viewer: str | None
    fresh: bool


class Assets:
    """`recheck`: seconds a bundle() answer is reused before the sources are looked at again (each
    look globs and stats every module: ~5 ms on the event loop, which every page load would pay)."""

    def __init__(
        self, root: Path = STATIC_DIR, mount: str = "/static", recheck: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.root, self.mount = root, mount
        self._hashes: dict[str, tuple[tuple[int, int], str]] = {}
        self.recheck, self.clock = recheck, clock
        self._bundle: tuple[float, Bundle | None] | None = None  # (when it was looked at, what was found)

    def digest(self, rel: str) -> str:
        """SHA-256 of a file's content (hex), recomputed only when its size or mtime changes."""
        path = self.root / rel
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._hashes.get(rel)
        if cached is None or cached[0] != stamp:
            cached = (stamp, hashlib.sha256(path.read_bytes()).hexdigest())
            self._hashes[rel] = cached
        return cached[1]

    def version(self, rel: str) -> str:
        return self.digest(rel)[:12]

    def sources_hash(self) -> str:
        """One hash of every source the bundle is made from: "path:sha256" lines, sorted by path."""
        paths = sorted({p.relative_to(self.root).as_posix() for pattern in SOURCES for p in self.root.glob(pattern)})
        lines = "".join(f"{rel}:{self.digest(rel)}\n" for rel in paths)
        return hashlib.sha256(lines.encode()).hexdigest()

    def bundle(self) -> Bundle | None:
        """The built page in static/dist, if there is one, and whether it is fresh: looked at again
        once `recheck` seconds have passed, so an edited checkout serves its sources within a second."""
        now = self.clock()
        if self._bundle is None or now - self._bundle[0] >= self.recheck:
            self._bundle = (now, self._look())
        return self._bundle[1]

    def _look(self) -> Bundle | None:
        try:
            manifest = json.loads((self.root / "dist" / "manifest.json").read_text())
            viewer = manifest.get("viewer.js")
            return Bundle(
                self.url(manifest["app.js"]),
                self.url(manifest["styles.css"]),
                viewer and self.url(viewer),
                manifest.get("sources") == self.sources_hash(),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def url(self, rel: str) -> str:
        return f"{self.mount}/{rel}?v={self.version(rel)}"

    def import_map(self) -> str:
        """JSON of the import map: "three", "three/addons/…", "intl-messageformat", and every module's versioned URL."""
        imports = {"three": self.url("vendor/three/three.module.js")}
        if (self.root / MESSAGE_FORMAT).is_file():
            imports["intl-messageformat"] = self.url(MESSAGE_FORMAT)
        modules = [*self.root.glob("js/**/*.js"), *self.root.glob("vendor/three/**/*.js")]
        for path in sorted(modules):
            rel = path.relative_to(self.root).as_posix()
            imports[f"{self.mount}/{rel}"] = self.url(rel)
            if rel.startswith(THREE_ADDONS + "/"):
                imports["three/addons/" + rel[len(THREE_ADDONS) + 1 :]] = self.url(rel)
        return json.dumps({"imports": imports}, indent=1)


class VersionedStaticFiles(StaticFiles):
    """StaticFiles whose ?v= URLs are cached as immutable; plain URLs are revalidated."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        versioned = b"v=" in scope.get("query_string", b"")
        cache = b"public, max-age=31536000, immutable" if versioned else b"no-cache"

        async def send_with_cache(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"cache-control", cache)]
            await send(message)

        await super().__call__(scope, receive, send_with_cache)
