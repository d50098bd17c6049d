"""The package's import direction: cli -> runner -> phases/serving -> records; analysis and render read records only
(and analysis the matrix's schema, a leaf that imports nothing else, to expand a matrix as results.json keeps it the
one way the runner does: a sweep's steps).

Read from the source with ast (every import, also those inside functions), so a violation fails here before it
hides in a lazy import. Also: no import cycle between modules, and no module over the size a reader can hold.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "evalharness"

# the layers each layer may import (itself included); "" is the package root (evalharness/__init__.py: __version__)
ALLOWED = {
    "records": {"", "records"},
    "matrix": {"", "matrix"},
    "serving": {"", "serving", "matrix", "records"},
    "phases": {"", "phases", "records"},
    "analysis": {"", "analysis", "records", "matrix"},
    "render": {"", "render", "analysis", "records"},
    "runner": {"", "runner", "phases", "serving", "analysis", "render", "records", "matrix"},
    "cli": {"", "cli", "runner", "phases", "serving", "analysis", "render", "records", "matrix"},
    "__main__": {"", "cli"},
    "": {""},
}
MAX_LINES = 350


def _module_name(path: Path) -> str:
    parts = ["evalharness", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports_of(path: Path) -> set[str]:
    """The evalharness modules one file imports, anywhere in it."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            # `from evalharness.phases import distribution` imports the module evalharness.phases.distribution
            found |= {f"{base}.{alias.name}" for alias in node.names if (PACKAGE.parent / f"{base}.{alias.name}".replace(".", "/")).with_suffix(".py").exists()}
    return {name for name in found if name == "evalharness" or name.startswith("evalharness.")}


def graph() -> dict[str, set[str]]:
    return {_module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def direction_violations(modules: dict[str, set[str]]) -> list[str]:
    out = []
    for module, imported in sorted(modules.items()):
        allowed = ALLOWED.get(_layer(module))
        if allowed is None:
            out.append(f"{module}: in no layer (add it to one, or to ALLOWED)")
            continue
        out += [f"{module} imports {name} ({_layer(module) or 'root'} may import only {sorted(allowed)})"
                for name in sorted(imported) if _layer(name) not in allowed]
    return out


def cycles(modules: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles between modules (a package's __init__ counts as the package)."""
    found, state = [], {}

    def visit(module: str, stack: list[str]) -> None:
        state[module] = "open"
        for name in sorted(modules.get(module, ())):
            if name == module or name not in modules:
                continue
            if state.get(name) == "open":
                found.append([*stack[stack.index(name):], name])
            elif name not in state:
                visit(name, [*stack, name])
        state[module] = "done"

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])
    return found


def test_imports_run_one_way():
    assert direction_violations(graph()) == []


def test_the_check_catches_a_record_importing_a_phase():
    modules = graph()
    modules["evalharness.records.run"] = modules["evalharness.records.run"] | {"evalharness.phases.probes"}
    assert direction_violations(modules) == [
        "evalharness.records.run imports evalharness.phases.probes (records may import only ['', 'records'])"]


def test_no_import_cycle():
    assert cycles(graph()) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_are_small_and_say_what_they_own(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    if path.name == "__init__.py" and path.parent != PACKAGE:
        assert ast.get_docstring(ast.parse(text)), "a subpackage's docstring says what it owns and must not import"
