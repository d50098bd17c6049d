"""Should the real SGLang 0.5.23 (requirements/sglang-engine.txt) install on this machine? CI's answer, so that a
failed SGLang set-up is never hidden behind skipped tests (scripts/test.sh, tests/integration/conftest.py).

scripts/setup.sh never fails on SGLang: where it cannot build .engine/sglang/venv it writes the reason to
.engine/sglang/unavailable and the real-SGLang tests report themselves skipped with it. That is right on a machine
where SGLang cannot install, and a hidden failure on one where it can. This module tells the two apart from platform
facts alone (stdlib only, so that any interpreter runs it):

    python scripts/sglang_expected.py before   # one line at the start of a run: expected here or not, and why
    python scripts/sglang_expected.py after    # after set-up: exit 1 where it was expected and set-up failed

Where a maintainer knowingly runs without SGLang on a machine where it would install, EVALHARNESS_SGLANG_SKIP=<why>
makes it not expected, and the reason is printed with the run.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SGLANG = REPO / ".engine" / "sglang"
UNAVAILABLE = SGLANG / "unavailable"
SETUP_LOG = REPO / ".engine" / "setup.sglang.log"
OVERRIDE = "EVALHARNESS_SGLANG_SKIP"

# The wheels the pins need, read from PyPI's index on 2026-12-04 (pip index versions with --python-version and
# --platform, and the file lists of sglang, torch, torchvision and triton): sglang 0.5.23 ships
# cp311/cp312/cp313 wheels for manylinux_2_34 x86_64 and aarch64 only (no macOS, no Windows, no 3.10, no 3.14);
# every other pin has Linux x86_64 wheels for 3.11 to 3.14 (numpy 2.4.6, scipy 1.17.1, fastapi 0.165.0, pillow 13.0.0
# and others start at 3.11).
PYTHONS = ((3, 11), (3, 12), (3, 13))
GLIBC = (2, 34)  # sglang-0.5.23-cp3XX-cp3XX-manylinux_2_34_x86_64.whl
MACHINES = ("x86_64", "amd64")
# The environment took 2.8 GB here (CPU torch 2.13.0); room for pip's download cache and its unpacking beside it, and
# for a torch wheel bigger than the CPU build (PyPI's own Linux torch 2.13.0 wheel is 527 MB, the CPU build 192 MB).
MIN_FREE_BYTES = 8 * 2**30
# SGLang's CPU server serving the test model (SmolLM2-135M, float32, 8192 KV tokens) held 2.5 GiB (unique memory of
# its three processes, measured here 2026-12-04), beside the harness and the vLLM engine the other tests share.
MIN_MEMORY_BYTES = 4 * 2**30

COVERS = ("unit tests, the SGLang contract tests against the stand-in server (tests/contract) and the integration "
          "tests on the real vLLM CPU engine; not the real-SGLang integration tests "
          "(tests/integration/test_sglang_*.py)")


@dataclass(frozen=True)
class Facts:
    """What the decision reads of the machine; `free_bytes` counts the current SGLang environment, if any, as free
    (set-up deletes it before it builds it again)."""

    system: str                       # platform.system(): Linux, Darwin, Windows
    machine: str                      # platform.machine(): x86_64, aarch64, arm64
    implementation: str               # CPython, PyPy
    python: tuple[int, int]           # of the interpreter set-up builds the environment with
    glibc: tuple[int, int] | None     # None: not glibc (musl, macOS)
    free_bytes: int
    memory_bytes: int | None          # None: unknown


def _glibc() -> tuple[int, int] | None:
    try:
        name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    except (AttributeError, ValueError, OSError):
        return None
    if name != "glibc":
        return None
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def _tree_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def gather(root: Path = REPO) -> Facts:
    """This machine's facts, as this interpreter sees them (scripts/test.sh runs it with set-up's interpreter)."""
    engine = root / ".engine"
    free = shutil.disk_usage(engine if engine.exists() else root).free
    venv = engine / "sglang" / "venv"
    if venv.is_dir():
        free += _tree_bytes(venv)
    try:
        memory: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = None
    return Facts(system=platform.system(), machine=platform.machine().lower(),
                 implementation=platform.python_implementation(), python=sys.version_info[:2], glibc=_glibc(),
                 free_bytes=free, memory_bytes=memory)


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def not_expected(facts: Facts, environ: dict[str, str] | None = None) -> str | None:
    """Why SGLang 0.5.23 is not expected to install here, or None where it is (and a failed set-up is a failure)."""
    environ = os.environ if environ is None else environ
    told = environ.get(OVERRIDE, "").strip()
    if told:
        return f"{OVERRIDE} is set: {told}"
    if facts.system != "Linux":
        name = {"Darwin": "macOS"}.get(facts.system, facts.system or "this system")
        return f"{name}: SGLang 0.5.23's CPU build is Linux only (its wheels are manylinux_2_34 x86_64 and aarch64)"
    if facts.machine not in MACHINES:
        return (f"{facts.machine}: the project's CPU set-up is for x86-64 Linux (README); PyPI has SGLang 0.5.23 "
                "for aarch64 too, but scripts/setup.sh's CPU environment is not tested on it")
    if facts.implementation != "CPython":
        return f"{facts.implementation}: SGLang 0.5.23's wheels are for CPython only"
    if facts.python not in PYTHONS:
        have = ", ".join(f"{a}.{b}" for a, b in PYTHONS)
        return (f"Python {facts.python[0]}.{facts.python[1]}: SGLang 0.5.23 has wheels for CPython {have} only "
                "(set PYTHON=python3.11 for scripts/setup.sh)")
    if facts.glibc is None:
        return "no glibc (musl?): SGLang 0.5.23's wheels are manylinux_2_34, glibc 2.34 or newer"
    if facts.glibc < GLIBC:
        return (f"glibc {facts.glibc[0]}.{facts.glibc[1]}: SGLang 0.5.23's wheels are manylinux_2_34, "
                "glibc 2.34 or newer")
    if facts.free_bytes < MIN_FREE_BYTES:
        return (f"{_gib(facts.free_bytes)} of disk free: the SGLang environment needs {_gib(MIN_FREE_BYTES)} "
                "(2.8 GB installed, with pip's download and unpacking beside it)")
    if facts.memory_bytes is not None and facts.memory_bytes < MIN_MEMORY_BYTES:
        return (f"{_gib(facts.memory_bytes)} of memory: SGLang's CPU server needs about 2.5 GiB for the test model, "
                f"beside the other tests' engine (at least {_gib(MIN_MEMORY_BYTES)})")
    return None


def describe(facts: Facts) -> str:
    glibc = f"glibc {facts.glibc[0]}.{facts.glibc[1]}" if facts.glibc else "no glibc"
    memory = f", {_gib(facts.memory_bytes)} memory" if facts.memory_bytes is not None else ""
    return (f"{facts.system} {facts.machine}, {facts.implementation} {facts.python[0]}.{facts.python[1]}, {glibc}, "
            f"{_gib(facts.free_bytes)} disk free{memory}")


def after_setup(unavailable: Path, reason: str | None, log: Path = SETUP_LOG) -> str | None:
    """The failure, after set-up, where SGLang was expected (`reason` None) and set-up could not build it (it wrote
    `unavailable`); None where the run goes on."""
    if reason is not None or not unavailable.exists():
        return None
    wrote = unavailable.read_text().strip() or "(empty)"
    return (f"SGLang 0.5.23 should install on this machine, and set-up could not build it: {unavailable} says "
            f"\"{wrote}\"; the whole output is in {log}. Fix the set-up, or run knowingly without the real-SGLang "
            f"tests with {OVERRIDE}='<why>'.")


def skipped_tests(skipped: list[tuple[str, str]], reason: str | None) -> str | None:
    """The failure, after the tests, where SGLang was expected (`reason` None) and real-SGLang tests were skipped
    anyway (test id, skip message); None where that is allowed or nothing was skipped."""
    if reason is not None or not skipped:
        return None
    lines = "\n".join(f"  {test}: {why}" for test, why in skipped)
    return (f"{len(skipped)} real-SGLang test(s) skipped on a machine where SGLang 0.5.23 should install "
            f"(see {UNAVAILABLE} and {SETUP_LOG}; {OVERRIDE}='<why>' to run knowingly without them):\n{lines}")


def main(argv: list[str]) -> int:
    if argv not in (["before"], ["after"]):
        print("usage: sglang_expected.py before|after", file=sys.stderr)
        return 2
    facts = gather()
    reason = not_expected(facts)
    if argv == ["before"]:
        if reason is None:
            print(f"sglang: SGLang 0.5.23 is expected to install here ({describe(facts)}): a failed SGLang set-up "
                  "or a skipped real-SGLang test fails this run")
        else:
            print(f"sglang: SGLang 0.5.23 is not expected to install here ({reason}); where set-up cannot build it, "
                  f"the real-SGLang tests are skipped and this run covers {COVERS}")
        return 0
    failure = after_setup(UNAVAILABLE, reason)
    if failure is not None:
        print(f"sglang: FAILED: {failure}", file=sys.stderr)
        return 1
    if UNAVAILABLE.exists():
        print(f"sglang: the real-SGLang tests will be skipped ({UNAVAILABLE.read_text().strip()}; not expected here: "
              f"{reason}): this run covers {COVERS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
