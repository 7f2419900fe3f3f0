"""The ASGI app: the API, the page, static files and the hardening headers.

`app.main:app` is what uvicorn serves; create_app() builds a fresh one (tests, benchmarks).
"""

from __future__ import annotations

import os
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app import __version__
from app.attention import Backend, default_backend, torch_available
from app.examples import DEFAULT_EXAMPLE, EXAMPLES
from app.schemas import ErrorResponse
from app.web import http
from app.web.assets import STATIC_DIR, TEMPLATES_DIR, Assets, VersionedStaticFiles
from app.web.languages import VARY, page_context
from app.web.middleware import Compress, HeadAsGet
from app.web.routers import ROUTERS
from app.web.security import SecurityHeaders, csp, script_hash

DESCRIPTION = """
Every stage of scaled dot-product self-attention, by name:
`scores` = Q·Kᵀ, `scaled` = scores/√d_k, `masked` (−∞ where the mask hides a key; `null` in JSON),
`weights` = row-wise softmax, `output` = weights·V.

Large tables travel faster as a binary frame: send or accept `application/x-attention-frame`
(its layout is in POST /api/attention's request body and answer). Every limit is listed in the
README and in each field's description. Every client error (4xx) has one shape:
`{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. Text answers are compressed (zstd or
gzip, as the client's Accept-Encoding prefers; frames never are); HEAD works on every GET route.
"""


def create_app(backend: Backend | None = None, model: str | None = None) -> FastAPI:
    """model: a local model directory for sentence mode (default $ATTENTION_MODEL, else all-MiniLM-L6-v2)."""
    app = FastAPI(
        title="Attention, in 3D",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    _one_error_schema(app)
    app.state.backend = _backend(backend or os.environ.get("ATTENTION_BACKEND") or default_backend())
    app.state.model_dir = model or os.environ.get("ATTENTION_MODEL") or None
    http.install(app)
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", VersionedStaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(Compress)
    app.add_middleware(HeadAsGet)  # outermost: HEAD is GET to everything inside

    assets = Assets()
    templates = Jinja2Templates(directory=TEMPLATES_DIR)
    templates.env.globals["static"] = assets.url

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    async def index(request: Request) -> HTMLResponse:
        bundle = assets.bundle()  # the built page; served unless a source changed since it was built
        import_map = "" if bundle and bundle.fresh else assets.import_map()
        context = {
            "bundle": bundle,
            "import_map": import_map,
            "default_example": DEFAULT_EXAMPLE,
            "examples": EXAMPLES.values(),
            **page_context(request, assets),  # its language: words, lang and dir, the other catalogs' URLs
        }
        response = templates.TemplateResponse(request, "index.html", context)
        response.headers["vary"] = VARY
        response.headers["content-security-policy"] = csp(*([script_hash(import_map)] if import_map else []))
        response.headers["cache-control"] = "no-cache"  # the page names the current asset versions
        return response

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    async def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="Attention, in 3D: API",
            swagger_js_url=assets.url("vendor/swagger-ui/swagger-ui-bundle.js"),
            swagger_css_url=assets.url("vendor/swagger-ui/swagger-ui.css"),
            swagger_favicon_url="data:,",
        )
        html = bytes(page.body).decode()
        inline = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
        page.headers["content-security-policy"] = csp(*map(script_hash, inline), inline_styles=True)
        return page

    return app


def _one_error_schema(app: FastAPI) -> None:
    """The schema documents the error body the app really sends (app.web.http.install): FastAPI's default
    HTTPValidationError (with "input" and "ctx") is replaced by ErrorResponse everywhere."""
    make = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = make()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}")["$defs"])
            components["ErrorResponse"] = {
                k: v for k, v in ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}").items()
                if k != "$defs"
            }  # fmt: skip
            _replace_refs(schema, "#/components/schemas/HTTPValidationError", "#/components/schemas/ErrorResponse")
            components.pop("HTTPValidationError", None)
            components.pop("ValidationError", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _replace_refs(node: Any, old: str, new: str) -> None:
    if isinstance(node, dict):
        if node.get("$ref") == old:
            node["$ref"] = new
        for value in node.values():
            _replace_refs(value, old, new)
    elif isinstance(node, list):
        for value in node:
            _replace_refs(value, old, new)


def _backend(name: str) -> Backend:
    """The backend to compute with, refused at start-up (not on the first request) when unusable."""
    if name == "numpy":
        return "numpy"
    if name == "torch":
        if not torch_available():
            raise RuntimeError("ATTENTION_BACKEND=torch, but torch is not installed (pip install torch==2.13.0)")
        return "torch"
    raise RuntimeError(f"ATTENTION_BACKEND must be 'numpy' or 'torch', not {name!r}")


app = create_app()
