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

MEASURE_ROLES = ("measures.spec", "measures.phase", "measures.compare", "measures.report", "measures.price",
                 "measures.task")
# a measure module's role, by its file: the folder's own module or the registry that lists every measure's; a task
# kind's worker runs against the served cell as a phase does, its report section is a report's, its cases and scorer
# are pure leaves like a spec
ROLE_OF = {"spec": "measures.spec", "specs": "measures.spec", "phase": "measures.phase", "phases": "measures.phase",
           "compare": "measures.compare", "comparisons": "measures.compare", "report": "measures.report",
           "reports": "measures.report", "price": "measures.price", "prices": "measures.price",
           "task": "measures.task", "tasks": "measures.task", "worker": "measures.phase",
           "tasks_report": "measures.report", "cases": "measures.spec", "score": "measures.spec"}
# the layers each layer may import (itself included); "" is the package root (evalharness/__init__.py: __version__)
ALLOWED = {
    "records": {"", "records"},
    "matrix": {"", "matrix", "measures.spec"},
    "serving": {"", "serving", "matrix", "records"},
    "phases": {"", "phases", "records"},
    "analysis": {"", "analysis", "records", "matrix", "measures.spec", "measures.compare", "measures.price"},
    "render": {"", "render", "analysis", "records", "measures.spec", "measures.report"},
    "runner": {"", "runner", "phases", "serving", "analysis", "render", "records", "matrix", "measures.phase",
               "measures.spec", "measures.task"},
    "cli": {"", "cli", "runner", "phases", "serving", "analysis", "render", "records", "matrix", *MEASURE_ROLES},
    # a measure's folder (evalharness/measures/<key>/, issue 59): each role as the layer it plays, its spec a leaf
    # above the records (a record of its may hold the package's own: batching's tasks answered alone are TaskScores)
    "measures.spec": {"", "measures.spec", "records"},
    "measures.phase": {"", "measures.phase", "measures.spec", "phases", "records"},
    "measures.compare": {"", "measures.compare", "measures.spec", "analysis", "records"},
    "measures.report": {"", "measures.report", "measures.spec", "render", "records"},
    "measures.price": {"", "measures.price", "measures.spec"},  # pure: the section and the plan's figures in
    # which quality tasks are of its kind, their worker and data check: what the runner and `validate` ask
    "measures.task": {"", "measures.task", "measures.spec"},
    "__main__": {"", "cli"},
    "": {""},
}
MAX_LINES = 350


def _module_name(path: Path) -> str:
    parts = ["evalharness", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "measures":  # a measure's module plays the layer of its role
        return ROLE_OF.get(parts[-1], "measures.spec")  # a folder's __init__: its docstring only
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


def measure_violations(modules: dict[str, set[str]]) -> list[str]:
    """A measure's folder imports no other measure's folder (the registries, measures/<role>s.py, list them all)."""
    out = []
    for module, imported in sorted(modules.items()):
        parts = module.split(".")
        if len(parts) < 4 or parts[1] != "measures":
            continue
        out += [f"{module} imports {name} (a measure imports no other measure)" for name in sorted(imported)
                if name.split(".")[1:2] == ["measures"] and len(name.split(".")) > 3 and name.split(".")[2] != parts[2]]
    return out


def test_a_measure_imports_no_other_measure():
    assert measure_violations(graph()) == []


def test_the_measure_check_catches_one_measure_reading_another():
    planted = {"evalharness.measures.prefix_cache.compare": {"evalharness.measures.other.spec"}}
    assert measure_violations(planted) == ["evalharness.measures.prefix_cache.compare imports "
                                           "evalharness.measures.other.spec (a measure imports no other measure)"]
    assert direction_violations({"evalharness.measures.prefix_cache.spec": {"evalharness.phases.retries"}}) == [
        "evalharness.measures.prefix_cache.spec imports evalharness.phases.retries (measures.spec may import only "
        "['', 'measures.spec', 'records'])"]


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


# ---------------------------------------------------------------- sizes, widths and engine names (issue 59, 4)

ROOT = PACKAGE.parent
SIZED = ("evalharness", "benchmarks", "scripts")  # the folders the size and width rules cover
MAX_WIDTH = 120
ENGINES_FOLDER = PACKAGE / "serving" / "engines"
def sized_files() -> list[Path]:
    return sorted(path for folder in SIZED for path in (ROOT / folder).rglob("*.py"))


def size_violations(files: dict[str, str]) -> list[str]:
    """Files over MAX_LINES lines and lines over MAX_WIDTH characters, from {path: text}."""
    out = []
    for name, text in sorted(files.items()):
        lines = text.splitlines()
        if len(lines) > MAX_LINES:
            out.append(f"{name}: {len(lines)} lines (at most {MAX_LINES})")
        out += [f"{name}:{number}: {len(line)} characters (at most {MAX_WIDTH})"
                for number, line in enumerate(lines, 1) if len(line) > MAX_WIDTH]
    return out


def engine_name_violations(files: dict[str, str], names: set[str]) -> list[str]:
    """A string constant that is an engine's name, in a package module outside serving/engines/: the code branches
    on a name, or keys a table by it, where it should ask the engine (serving/engines/_common.py). The matrix and the
    report ask too: the engines are handed to them (matrix/engines.py, records/engine_profile.py)."""
    out = []
    for name, text in sorted(files.items()):
        if name.startswith("serving/engines/"):
            continue
        out += [f"{name}:{node.lineno}: {node.value!r}" for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]
    return out


def _package_texts() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def _engine_names() -> set[str]:
    from evalharness.serving.engines import ENGINES

    return set(ENGINES)


def test_modules_and_lines_are_small_in_the_package_benchmarks_and_scripts():
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sized_files()}
    assert size_violations(texts) == []


def test_the_size_check_catches_a_long_module_and_a_wide_line():
    planted = {"benchmarks/big.py": "x = 1\n" * (MAX_LINES + 1), "scripts/wide.py": "y = '" + "a" * MAX_WIDTH + "'\n"}
    assert size_violations(planted) == [f"benchmarks/big.py: {MAX_LINES + 1} lines (at most {MAX_LINES})",
                                        f"scripts/wide.py:1: {MAX_WIDTH + 6} characters (at most {MAX_WIDTH})"]


def test_no_engine_is_named_outside_its_module():
    assert engine_name_violations(_package_texts(), _engine_names()) == []


def test_the_engine_name_check_catches_a_runner_branching_on_a_name():
    texts = _package_texts()
    texts["runner/cell.py"] += '\n\nif engine.name == "external":\n    pass\n'
    lines = len(texts["runner/cell.py"].splitlines())
    assert engine_name_violations(texts, _engine_names()) == [f"runner/cell.py:{lines - 1}: 'external'"]
    # and a table keyed by engine in a render module not on the list
    texts = _package_texts()
    texts["render/markdown.py"] += '\nNOTES = {"vllm": "", "sglang": ""}\n'
    assert len(engine_name_violations(texts, _engine_names())) == 2


def test_every_engine_answers_what_the_runner_and_validate_ask():
    """A new engine is one module under serving/engines/: it must answer every capability the package asks."""
    from evalharness.serving.engines import ENGINES

    from evalharness.records.engine_profile import SETTING_CONCEPTS, SettingSource

    import inspect

    from evalharness.serving.engines._common import Engine

    # every question of the protocol, so one added there is asked of every engine here
    asked = {name for name, _ in inspect.getmembers(Engine, inspect.isfunction) if not name.startswith("_")}
    asked |= set(Engine.__annotations__)
    assert {"launch_plan", "before_load", "check_cells", "log_markers", "logprob_path", "cache_flush_path"} <= asked
    for name, engine in ENGINES.items():
        assert engine.name == name and sorted(a for a in asked if not hasattr(engine, a)) == [], name
        assert engine.seeds and set(engine.settings) <= set(SETTING_CONCEPTS), name
        assert all(isinstance(source, SettingSource) and source.part in ("resolved", "server")
                   for source in engine.settings.values()), name
    assert {name for name, engine in ENGINES.items() if not engine.launches} == {"external"}


def unprofiled_render_calls(files: dict[str, str]) -> list[str]:
    """A call of render_all outside render/ that does not hand it the engines: its report would call every engine
    unknown (what it does with a seed, where it keeps a setting)."""
    return [f"{name}:{node.lineno}" for name, text in sorted(files.items()) if not name.startswith("render/")
            for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "render_all"
            and "engines" not in {k.arg for k in node.keywords}]


def test_every_rendering_of_a_run_is_handed_the_engines():
    texts = _package_texts()
    assert unprofiled_render_calls(texts) == []
    texts["cli/runs.py"] += "\n\nrender_all(run, out_dir)\n"
    assert unprofiled_render_calls(texts) == [f"cli/runs.py:{len(texts['cli/runs.py'].splitlines())}"]


ENTRIES = {"spec": "SPEC", "phase": "run_phase", "compare": "compare", "report": "tables", "price": "price"}
TASK_ENTRIES = {"task": "claim", "tasks_report": "section"}  # a task kind's, besides


def measure_folder_violations(folders: list[str], keys: tuple[str, ...], defines,
                              task_kinds: tuple[str, ...] = ()) -> list[str]:
    """Every measure folder is in the catalog, every catalog key (its folder, catalog.py FOLDERS) a folder, each role
    module defining its entry, and a task kind's its own two."""
    out = [f"measures/{f}/ is not in measures/catalog.py MEASURES" for f in folders if f not in keys]
    out += [f"measures/catalog.py names {k}, which has no folder" for k in keys if k not in folders]
    out += [f"measures/{k}/{role}.py does not define {name}" for k in keys if k in folders
            for role, name in {**ENTRIES, **(TASK_ENTRIES if k in task_kinds else {})}.items()
            if not defines(k, role, name)]
    return out


def _defines(key: str, role: str, name: str) -> bool:
    path = PACKAGE / "measures" / key / f"{role}.py"
    if not path.exists():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.Assign)) and (
        getattr(node, "name", None) == name or any(getattr(t, "id", None) == name for t in getattr(node, "targets", [])))
        for node in tree.body)


def test_every_measure_folder_is_in_the_catalog_and_answers_every_registry():
    from evalharness.measures.catalog import FOLDERS, MEASURES, TASK_KINDS

    folders = sorted(p.parent.name for p in (PACKAGE / "measures").glob("*/__init__.py"))
    assert measure_folder_violations(folders, tuple(FOLDERS.get(k, k) for k in MEASURES), _defines,
                                     tuple(FOLDERS.get(k, k) for k in TASK_KINDS)) == []


def test_the_catalog_check_catches_a_folder_left_out_and_an_entry_missing():
    assert measure_folder_violations(["a", "b"], ("a", "c"), lambda k, role, name: role != "report") == [
        "measures/b/ is not in measures/catalog.py MEASURES", "measures/catalog.py names c, which has no folder",
        "measures/a/report.py does not define tables"]
    assert measure_folder_violations(["a"], ("a",), lambda k, role, name: role != "task", task_kinds=("a",)) == [
        "measures/a/task.py does not define claim"]


# ---------------------------------------------------------------- tests mirror the package (issue 59, 4)

UNIT = Path(__file__).resolve().parent
# the repository's own folders of code besides the package, whose tests mirror them too
MIRRORED_ROOTS = ("benchmarks", "scripts")
# whole-repository tests, at the top: this file (the package's shape) and test_docs.py (the pages against the code)
TOP_LEVEL = {"test_layout.py", "test_docs.py"}


def mirror_violations(test_files: list[str], package_folders: set[str]) -> list[str]:
    """Each unit test module (a path relative to tests/unit/) lies in the folder of what it tests: a package folder
    (analysis/, phases/detectors/, ...) or benchmarks/ or scripts/; at the top only TOP_LEVEL."""
    out = []
    for name in sorted(test_files):
        folder = str(Path(name).parent)
        if folder == ".":
            if Path(name).name not in TOP_LEVEL:
                out.append(f"tests/unit/{name}: at the top; put it in the folder of the package part it tests")
        elif folder not in package_folders and folder.split("/")[0] not in MIRRORED_ROOTS:
            out.append(f"tests/unit/{name}: evalharness/{folder}/ is no package folder")
    return out


def _package_folders() -> set[str]:
    return {str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}


def test_unit_tests_mirror_the_package_folders():
    tests = [str(p.relative_to(UNIT)) for p in UNIT.rglob("test_*.py")]
    assert mirror_violations(tests, _package_folders()) == []


def test_the_mirror_check_catches_a_test_at_the_top_and_one_in_a_folder_the_package_lacks():
    planted = ["test_gate.py", "reports/test_tables.py", "analysis/test_gate.py", "benchmarks/test_two_stage.py"]
    assert mirror_violations(planted, _package_folders()) == [
        "tests/unit/reports/test_tables.py: evalharness/reports/ is no package folder",
        "tests/unit/test_gate.py: at the top; put it in the folder of the package part it tests"]
