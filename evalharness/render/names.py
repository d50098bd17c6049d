"""The names a reader sees for cells (issue 58, 3): a cell by what differs from the reference (`compiled`,
`bfloat16+bad_rope`, `deepgemm=off`: a value alone where it names its axis, else `axis=value`), the reference as
"reference", and one key table from those names back to the
ids that results.json and the run folder keep. Ids of at most SHORT characters (a matrix's own `cells:` names, most
tests') are shown as they are: a name is only worth a key where the id is too long to read.

Pure: reads records (records/run.py) only; every renderer that writes cell ids into Markdown goes through `named`.
"""

from __future__ import annotations

import json
import re

from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text

SHORT = 30  # characters: an id this long or shorter is its own name


def short_names(run: RunResult) -> dict[str, str]:
    """{cell id: the name shown} for every cell of the run whose id is longer than SHORT: the axes whose value
    differs from the reference's, joined by '+' in the matrix's axis order, each the value's `label:` where the
    matrix gives one, else its value alone where that value tells its axis (_telling_values), else `axis=value`;
    the reference 'reference'.
    A cell whose axes do not tell it apart (the same values as another, or as the reference) keeps its id."""
    reference = run.cells.get(run.reference)
    base = reference.axes if reference is not None else {}
    telling = _telling_values(run)
    labels = {(axis, value): settings.get("label") for axis, values in (run.meta.matrix.get("axes") or {}).items()
              for value, settings in (values or {}).items() if isinstance(settings, dict) and settings.get("label")}
    names: dict[str, str] = {}
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if len(cid) <= SHORT or cell is None:
            continue
        if cid == run.reference:
            names[cid] = "reference"
            continue
        differs = [labels.get((axis, value)) or (value if value in telling else f"{axis}={value}")
                   for axis, value in cell.axes.items() if base.get(axis) != value]
        names[cid] = "+".join(differs) if differs else cid
    taken: dict[str, list[str]] = {}
    for cid, name in names.items():
        taken.setdefault(name, []).append(cid)
    clash = {cid for ids in taken.values() if len(ids) > 1 for cid in ids}
    return {cid: (cid if cid in clash else name) for cid, name in names.items()}


GENERIC = {"on", "off", "true", "false", "yes", "no", "none", "default", "auto", "enabled", "disabled"}


def _telling_values(run: RunResult) -> set[str]:
    """Axis values that name their axis alone (`bfloat16`, `compiled`): used by exactly one axis of the run, not a
    number, and not a word every switch uses (on, off, none); the others are written `axis=value`."""
    axes: dict[str, set[str]] = {}
    for cell in run.cells.values():
        for axis, value in cell.axes.items():
            axes.setdefault(value, set()).add(axis)
    names = {axis for cell in run.cells.values() for axis in cell.axes}
    return {value for value, used in axes.items() if len(used) == 1 and value.lower() not in GENERIC
            and value not in names and not value.replace(".", "").replace("-", "").isdigit()}


def named(text: str, names: dict[str, str]) -> str:
    """`text` (Markdown) with every cell id written as code (`` `id` ``, or a confirmation launch's
    `` `id.confirm-1-2` ``) shown by its name. Model output never matches: md_text escapes its backticks."""
    if not names:
        return text
    ids = sorted(names, key=len, reverse=True)  # an id that is a prefix of another's is tried after it
    pattern = re.compile("`(" + "|".join(re.escape(cid) for cid in ids) + r")((?:\.[\w-]+)?)`")
    return _fitted_separators(pattern.sub(lambda m: f"`{names[m.group(1)]}{m.group(2)}`", text))


_SEPARATOR = re.compile(r"^\|(?:-+\|)+$")
_CELL_EDGE = re.compile(r"(?<!\\)\|")  # a pipe that is not escaped text


def _fitted_separators(text: str) -> str:
    """Each pipe table's separator line sized again to its columns' widest cell: tabulate sized it to the ids the
    names replaced, so a 50-character id would leave a 50-dash column under a 16-character name."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i == 0 or not _SEPARATOR.match(line):
            continue
        block = [lines[i - 1]]
        for row in lines[i + 1:]:
            if not row.startswith("|"):
                break
            block.append(row)
        widths = [0] * (line.count("|") - 1)
        for row in block:
            for k, cell in enumerate(_CELL_EDGE.split(row)[1:-1][:len(widths)]):
                widths[k] = max(widths[k], len(cell))
        lines[i] = "|" + "|".join("-" * max(3, w) for w in widths) + "|"
    return "\n".join(lines)


def key_table(run: RunResult, names: dict[str, str]) -> list[str]:
    """The one place ids and names meet: each renamed cell's name, its id (its folder under cells/) and its launch
    flags that differ from the reference's."""
    if not names:
        return []
    reference = run.cells.get(run.reference)
    rows = []
    for cid in run.cell_order:
        if cid not in names:
            continue
        cell = run.cells[cid]
        flags = "" if reference is None else flag_changes(cell.args, reference.args)
        rows.append([md_text(names[cid]), md_text(cid), md_text(flags or ("the reference's own" if cid ==
                                                                            run.reference else "none"), 300)])
    return ["Cell names (what differs from the reference; the id names the cell's folder under `cells/`):", "",
            markdown_table(["name", "id", "launch flags vs the reference"], rows), ""]


def _off(value) -> bool:
    return value is False or value is None  # a flag switched off (0 is a value, not "off")


def flag_changes(args: dict, reference: dict, words: bool = False) -> str:
    """The cell's flags against the reference's: '+ --flag value' added or changed, '- --flag' switched off (with
    `words`: 'with --flag value, without --flag', for a sentence)."""
    def shown(flag: str, value) -> str:
        return flag if value is True else f"{flag} {json.dumps(value) if isinstance(value, (dict, list)) else value}"

    added = [shown(flag, value) for flag, value in args.items() if reference.get(flag) != value and not _off(value)]
    removed = [flag for flag, value in reference.items() if not _off(value) and _off(args.get(flag))]
    if words:
        return ", ".join([*(f"with {a}" for a in added), *(f"without {r}" for r in removed)])
    return "; ".join([*(f"+ {a}" for a in added), *(f"- {r}" for r in removed)])
