"""The README and docs/ for a new user (issue 58, 8): the README is short and its first screen has the two commands;
the generated pages (the matrix reference, the CLI reference, the layout) are what scripts/make_docs.py writes now,
and the matrix reference names every key of the schema; every relative link resolves; `evalharness --help` lists
every command in the order a user runs them. A test that fails here after a schema key, an option or a module was
added is fixed by running `.venv/bin/python scripts/make_docs.py`."""

import importlib.util
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# the order a user runs them: check a matrix, price it, run it, re-render, save a baseline, gate, compare; then tools
USER_ORDER = ["validate", "plan", "run", "report", "baseline", "gate", "compare", "diagnose", "detect", "bench"]
REGENERATE = "out of date: run `.venv/bin/python scripts/make_docs.py`"


def _make_docs():
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a `# comment` in a bash block is not a heading, nor a link a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


# ---- the README -----------------------------------------------------------------------------------------------------

def test_the_readme_is_short_and_its_first_screen_has_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    first_screen = "\n".join(lines[:40])
    assert "scripts/demo.sh" in first_screen and "scripts/test.sh" in first_screen
    assert "reports/sample/summary.md" in first_screen  # the sample verdict, and where it comes from


def test_the_readme_carries_no_dates_or_commit_hashes():
    # Why: "The README is 711 lines (10,470 words, 29 dates, about 19 commit hashes)": those live in docs/history.md
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"\b20\d\d-\d\d-\d\d\b", text) == []
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", text) if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    assert hashes == []


def test_the_readme_minimal_matrix_loads_through_the_schema(tmp_path):
    from evalharness.cli import main
    from evalharness.serving.engines import load_matrix

    block = re.search(r"^```yaml\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M).group(1)
    path = tmp_path / "my-model.yaml"
    path.write_text(block, encoding="utf-8")
    matrix, cells, reference = load_matrix(path)
    assert matrix.engine == "sglang" and len(cells) == 4
    assert reference.id == "attention-flashinfer.graphs-on"
    assert matrix.report.operating_point.max_goodput and matrix.throughput.sweep.concurrency == [1, 8, 32]
    # the same check a user runs, without an SGLang installed (its parser check is tests/integration's)
    assert main(["validate", "--matrix", str(path), "--no-engine-check"]) == 0


# ---- the generated pages --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["docs/matrix.md", "docs/cli.md", "docs/layout.md"])
def test_a_generated_page_is_what_the_generator_writes_now(page):
    make_docs = _make_docs()
    text = (ROOT / page).read_text(encoding="utf-8")
    assert make_docs.generated_part(text, page) == make_docs.GENERATED[page](), f"{page}: {REGENERATE}"


def _key_patterns(model: type[BaseModel], prefix: str = "") -> list[str]:
    """A regex per key of the matrix file, walked from the pydantic models on its own (a mapping's key is any `<name>`,
    a list's item `[]`), so that the generator's walk is checked, not repeated."""

    def nested(annotation, suffix=""):
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [(annotation, suffix)]
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is dict:
            return nested(args[1], suffix + r"\.<[^>`]+>")
        if origin is list:
            return nested(args[0], suffix + r"\[\]")
        return [found for arg in args for found in nested(arg, suffix)]

    patterns = []
    for name, info in model.model_fields.items():
        key = f"{prefix}\\.{re.escape(name)}" if prefix else re.escape(name)
        patterns.append(key)
        for child, suffix in nested(info.annotation):
            patterns += _key_patterns(child, key + suffix)
    return patterns


def test_the_matrix_reference_lists_every_key_of_the_schema():
    from evalharness.matrix.schema import Matrix

    text = (ROOT / "docs" / "matrix.md").read_text(encoding="utf-8")
    patterns = _key_patterns(Matrix)
    assert len(patterns) > 100  # the walk reached the nested sections
    missing = [p for p in patterns if not re.search(f"`{p}`", text)]
    assert missing == [], f"keys missing from docs/matrix.md: {missing} ({REGENERATE})"
    for key in ("quality.task_settings.<task>.looks", "throughput.scenarios[].repeats.min",
                "axes.<axis>.<value>.engine", "report.slo.<metric>.max_ms", "cluster.gpus_per_cell"):
        assert f"`{key}`" in text


def test_every_key_of_the_matrix_reference_says_what_it_does():
    from evalharness.matrix.schema import Matrix

    rows = _make_docs().matrix_rows(Matrix)
    assert [key for key, _, _, text in rows if not text.strip()] == [], \
        "give the key a Field(description=...) in the schema (or a line in scripts/matrix_notes.py)"


def _commands(parser, prefix=""):
    import argparse

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [f"{prefix}{name}", *_commands(sub, f"{prefix}{name} ")]
    return found


def test_the_cli_reference_names_every_command_and_option():
    from evalharness.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    commands = _commands(parser)
    assert "baseline save" in commands and "plan" in commands
    for command in commands:
        assert f"## `evalharness {command}`" in text, f"{command}: {REGENERATE}"


# ---- --help ---------------------------------------------------------------------------------------------------------

def test_help_lists_every_command_in_the_order_a_user_runs_them():
    # Why: "`evalharness --help` omits `plan`" (its description listed the commands without it, in no user's order)
    from evalharness.cli import build_parser

    assert [c for c in _commands(build_parser()) if " " not in c] == USER_ORDER  # every command, none unordered
    out = subprocess.run([sys.executable, "-m", "evalharness", "--help"], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    head, commands = out.split("\ncommands:\n", 1)
    assert re.findall(r"^    (\w+)\s", commands, flags=re.M) == USER_ORDER
    description = " ".join(head.split("\noptions:\n")[0].split())
    positions = [description.find(f" {name} ") for name in USER_ORDER if name != "baseline"]
    assert -1 not in positions and positions == sorted(positions), description


# ---- links ----------------------------------------------------------------------------------------------------------

def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens and underscores dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", _prose(path.read_text(encoding="utf-8")), flags=re.M)}


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading '{anchor}' in {where.relative_to(ROOT)}")
    assert broken == []
