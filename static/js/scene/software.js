// Whether WebGL is drawn by a software rasteriser (SwiftShader, llvmpipe: a browser without a
// usable GPU, as in CI or on an old school laptop). There, multisampling costs most of a frame
// (headless Chromium: ~200 ms of a 3D view's frame with it, ~70 ms without), so the views draw
// without it; with a GPU they keep it.

const SOFTWARE = /swiftshader|llvmpipe|softpipe|software/i;
const known = new Map(); // one probe per page: "software" → true | false

/** Whether `gl`'s renderer is a software one. */
function isSoftware(gl) {
  try {
    const info = gl?.getExtension("WEBGL_debug_renderer_info");
    return Boolean(info && SOFTWARE.test(String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL))));
  } catch {
    return false;
  }
}

/**
 * A WebGL2 context on `canvas`, with the attributes three.js's WebGLRenderer asks for and no
 * multisampling, when this browser's renderer is a software one; else null (a GPU: the renderer
 * makes its own multisampled context on a canvas of its own). The probe is this context itself:
 * a throwaway context to ask first cost a second context's creation on every page load.
 */
export function softwareContext(canvas) {
  if (known.get("software") === false) return null;
  let gl = null;
  try {
    gl = canvas.getContext("webgl2", {
      alpha: true,
      depth: true,
      stencil: false,
      antialias: false,
      premultipliedAlpha: true,
      preserveDrawingBuffer: false,
      powerPreference: "default",
      failIfMajorPerformanceCaveat: false,
    });
  } catch {
    gl = null;
  }
  const software = isSoftware(gl);
  known.set("software", software);
  if (software) return gl;
  gl?.getExtension("WEBGL_lose_context")?.loseContext();
  return null;
}
