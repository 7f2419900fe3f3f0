"""The shape of app/'s imports, read from the source (ast), function-local imports included.

- No cycle: a module never imports, through any chain, a module that imports it.
- Errors live in a leaf: app.errors imports nothing from app and nothing from the web.
- The web layer is app/web/ and nothing else: every HTTP route and its plumbing live there, and every
  other module of app/ (the domains: attention, model, lesson, classroom, notebook, …) is pure — it
  imports no web framework and nothing from app.web. Only the entry points (app.main, app.cli,
  app.__main__) sit above the web layer. "Pure" is read from the layout, not from a list.
- The math (app.attention, app.model, app.lesson) imports no pydantic either: it takes and gives
  arrays and plain values.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("fastapi", "starlette", "uvicorn")
WEB_LAYER = "app.web"
ENTRY_POINTS = ("app.main", "app.cli", "app.__main__")
MATH = ("app.attention", "app.model", "app.lesson")
VALIDATION = ("pydantic", "pydantic_core", "app.schemas", "app.frame", "app.classroom.schemas")


def _is(name: str, prefixes: tuple[str, ...] | str) -> bool:
    """Whether the dotted `name` is one of `prefixes` or inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in ((prefixes,) if isinstance(prefixes, str) else prefixes))


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The app module that importing `name` runs last (a package's submodule, else the package)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> tuple[set[str], set[str]]:
    """(the app modules `module` imports, every top-level name it imports), anywhere in its body."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    inside, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            found = [f"{base}.{a.name}" for a in node.names] if base.startswith("app") else [base]
        else:
            continue
        for name in found:
            names.add(name)
            if name == "app" or name.startswith("app."):
                target = _resolve(name)
                if target and target != module:
                    inside.add(target)
    return inside, names


GRAPH = {m: imports(m)[0] for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


DOMAIN = sorted(m for m in MODULES if not _is(m, WEB_LAYER) and m not in ENTRY_POINTS and m != "app")


def test_the_graph_is_read_from_the_source() -> None:
    # a few arrows known to exist: if the reader broke, the cycle test below would pass on an empty graph
    assert "app.attention" in GRAPH["app.web.attention"]
    assert "app.model.nn" in GRAPH["app.model.families.layernorm"]
    assert "app.errors" in GRAPH["app.web.http"]
    assert len(MODULES) > 40 and sum(map(len, GRAPH.values())) > 100


def test_the_layout_names_the_layers() -> None:
    # the web layer holds every route module; the domains are most of app/
    routes = [m for m in MODULES if "router = APIRouter(" in MODULES[m].read_text(encoding="utf-8")]
    assert routes and all(_is(m, WEB_LAYER) for m in routes), routes
    assert {"app.attention", "app.model.families.llama.layer", "app.lesson.rnn", "app.classroom.broker"} <= set(DOMAIN)
    assert len(DOMAIN) > 40


def test_cycles_are_found_when_there_are_some() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_app_has_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_errors_are_a_leaf() -> None:
    inside, names = imports("app.errors")
    assert inside == set()
    assert not [n for n in names if _is(n, (*FRAMEWORKS, *VALIDATION, WEB_LAYER))]


@pytest.mark.parametrize("module", DOMAIN)
def test_domains_import_nothing_from_the_web(module: str) -> None:
    _, names = imports(module)
    assert [n for n in names if _is(n, (*FRAMEWORKS, WEB_LAYER))] == []


@pytest.mark.parametrize("module", [m for m in DOMAIN if _is(m, MATH)])
def test_math_imports_no_validation_layer(module: str) -> None:
    _, names = imports(module)
    assert [n for n in names if _is(n, VALIDATION)] == []
