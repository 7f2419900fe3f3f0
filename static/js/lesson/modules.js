// The chapters' modules (chapters/index.js lists them, CONTRACT.md says what one is), each
// imported once, on first use. A chapter whose module is not on the server, or fails to load,
// is "coming": its loader answers null.

import { CHAPTERS } from "../chapters/index.js";

/** The page's import map lists every module the server has (unbundled page); null when bundled. */
function listedModules() {
  const script = document.querySelector('script[type="importmap"]');
  if (!script) return null;
  try {
    return new Set(Object.keys(JSON.parse(script.textContent).imports ?? {}));
  } catch {
    return null;
  }
}

export class ChapterModules {
  constructor() {
    this.modules = new Map(); // id → Promise<module | null> (null: coming)
    this.listed = listedModules();
  }

  /** A chapter's module, or null while it is coming (not written yet, or failed to load). */
  load(id) {
    const entry = CHAPTERS.find((c) => c.id === id);
    if (!entry) return Promise.resolve(null);
    if (!this.modules.has(id)) {
      const promise =
        this.listed && !this.listed.has(`/static/js/chapters/${id}.js`)
          ? Promise.resolve(null) // not on the server: no request, no 404 in the console
          : Promise.resolve()
              .then(() => entry.load())
              .then((m) => (m.default && Array.isArray(m.default.steps) ? m.default : null))
              .catch((err) => {
                console.warn(`chapter ${id} is not available:`, err);
                return null;
              });
      this.modules.set(id, promise);
    }
    return this.modules.get(id);
  }
}
