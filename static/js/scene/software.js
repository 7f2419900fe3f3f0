// Whether WebGL is drawn by a software rasteriser (SwiftShader, llvmpipe: a browser without a
// usable GPU, as in CI or on an old school laptop). There, multisampling costs most of a frame
// (headless Chromium: ~200 ms of a 3D view's frame with it, ~70 ms without), so the views draw
// without it; with a GPU they keep it.

const SOFTWARE = /swiftshader|llvmpipe|softpipe|software/i;
const known = new Map(); // one probe per page: "software" → true | false

/** True when this browser's WebGL renderer is a software one (probed once, on a throwaway canvas). */
export function softwareWebGl() {
  if (!known.has("software")) {
    let software = false;
    try {
      const gl = document.createElement("canvas").getContext("webgl2") ?? document.createElement("canvas").getContext("webgl");
      const info = gl?.getExtension("WEBGL_debug_renderer_info");
      software = Boolean(info && SOFTWARE.test(String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL))));
      gl?.getExtension("WEBGL_lose_context")?.loseContext();
    } catch {
      software = false;
    }
    known.set("software", software);
  }
  return known.get("software");
}
