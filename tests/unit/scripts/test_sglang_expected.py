"""scripts/sglang_expected.py: whether SGLang 0.5.23 should install on a machine, from its platform facts, and the CI
gates built on it (a failed SGLang set-up, or skipped real-SGLang tests, fail the run where it should install)."""

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scripts import sglang_expected as se

REPO = Path(__file__).resolve().parents[3]
GiB = 2**30
# a machine like CI's: where SGLang 0.5.23 installs
LINUX = se.Facts(system="Linux", machine="x86_64", implementation="CPython", python=(3, 11), glibc=(2, 36),
                 free_bytes=50 * GiB, memory_bytes=24 * GiB)


def reason(environ=None, **changes):
    return se.not_expected(dataclasses.replace(LINUX, **changes), environ or {})


@pytest.mark.parametrize("python", [(3, 11), (3, 12), (3, 13)])
def test_linux_x86_64_with_a_python_sglang_has_wheels_for_is_expected(python):
    assert reason(python=python) is None
    assert reason(python=python, glibc=(2, 34), free_bytes=se.MIN_FREE_BYTES, memory_bytes=se.MIN_MEMORY_BYTES) is None
    assert reason(memory_bytes=None) is None  # memory unknown: not a reason


@pytest.mark.parametrize("changes,says", [
    ({"system": "Darwin", "machine": "arm64"}, "macOS: SGLang 0.5.23's CPU build is Linux only"),
    ({"system": "Windows", "machine": "amd64"}, "Windows: SGLang 0.5.23's CPU build is Linux only"),
    ({"machine": "aarch64"}, "aarch64: the project's CPU set-up is for x86-64 Linux"),
    ({"python": (3, 10)}, "Python 3.10: SGLang 0.5.23 has wheels for CPython 3.11, 3.12, 3.13 only"),
    ({"python": (3, 14)}, "Python 3.14: SGLang 0.5.23 has wheels for CPython 3.11, 3.12, 3.13 only"),
    ({"implementation": "PyPy"}, "PyPy: SGLang 0.5.23's wheels are for CPython only"),
    ({"glibc": (2, 31)}, "glibc 2.31: SGLang 0.5.23's wheels are manylinux_2_34"),
    ({"glibc": None}, "no glibc (musl?)"),
    ({"free_bytes": 5 * GiB}, "5.0 GiB of disk free: the SGLang environment needs 8.0 GiB"),
    ({"free_bytes": se.MIN_FREE_BYTES - 1}, "of disk free"),
    ({"memory_bytes": 2 * GiB}, "2.0 GiB of memory"),
])
def test_a_machine_where_it_cannot_install_gets_the_reason(changes, says):
    assert says in reason(**changes)


def test_a_maintainer_may_run_knowingly_without_it_and_the_reason_is_theirs():
    told = reason({se.OVERRIDE: "the box's disk is being replaced"})
    assert told == "EVALHARNESS_SGLANG_SKIP is set: the box's disk is being replaced"
    assert reason({se.OVERRIDE: "  "}) is None  # no reason given: still expected


def test_a_failed_setup_fails_the_run_where_sglang_is_expected(tmp_path):
    unavailable = tmp_path / "unavailable"
    log = tmp_path / "setup.sglang.log"
    assert se.after_setup(unavailable, None, log) is None  # set-up built it
    unavailable.write_text("SGLang 0.5.23 could not be installed here: ERROR: No matching distribution found\n")
    failure = se.after_setup(unavailable, reason(), log)
    assert failure is not None
    assert str(unavailable) in failure and str(log) in failure and "No matching distribution found" in failure
    # where it is not expected, the same file is the skip's reason and the run goes on
    assert se.after_setup(unavailable, reason(system="Darwin"), log) is None


def test_the_after_step_exits_1_on_an_expected_machine_and_says_what_it_covers_elsewhere(tmp_path, monkeypatch,
                                                                                          capsys):
    unavailable = tmp_path / "unavailable"
    unavailable.write_text("SGLang 0.5.23 could not be installed here: error: out of disk\n")
    monkeypatch.setattr(se, "UNAVAILABLE", unavailable)
    monkeypatch.delenv(se.OVERRIDE, raising=False)
    monkeypatch.setattr(se, "gather", lambda: LINUX)
    assert se.main(["after"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sglang: FAILED:") and str(unavailable) in err and "setup.sglang.log" in err
    assert se.main(["before"]) == 0
    assert "is expected to install here (Linux x86_64, CPython 3.11, glibc 2.36" in capsys.readouterr().out

    monkeypatch.setattr(se, "gather", lambda: dataclasses.replace(LINUX, python=(3, 10)))
    assert se.main(["before"]) == 0
    out = capsys.readouterr().out
    assert "is not expected to install here (Python 3.10" in out and se.COVERS in out
    assert se.main(["after"]) == 0
    out = capsys.readouterr().out
    assert "the real-SGLang tests will be skipped (SGLang 0.5.23 could not be installed here" in out
    assert se.COVERS in out
    assert se.main(["sideways"]) == 2


def test_skipped_real_sglang_tests_fail_only_where_sglang_is_expected():
    skipped = [("tests/integration/test_sglang_real.py::test_ready", "Skipped: real SGLang unavailable: ...")]
    failure = se.skipped_tests(skipped, None)
    assert failure is not None and "1 real-SGLang test(s) skipped" in failure
    assert "tests/integration/test_sglang_real.py::test_ready" in failure
    assert se.skipped_tests(skipped, "macOS: ...") is None
    assert se.skipped_tests([], None) is None


def test_gather_counts_the_environment_set_up_deletes_as_free(tmp_path, monkeypatch):
    venv = tmp_path / ".engine" / "sglang" / "venv"
    venv.mkdir(parents=True)
    (venv / "lib.so").write_bytes(b"x" * 4096)
    _Usage.seen = []
    monkeypatch.setattr(se.shutil, "disk_usage", _Usage)
    facts = se.gather(tmp_path)
    assert facts.free_bytes == GiB + 4096 and _Usage.seen == [tmp_path / ".engine"]
    assert facts.python == sys.version_info[:2] and facts.system and facts.machine


class _Usage:
    seen: list[Path] = []

    def __init__(self, path):
        _Usage.seen.append(Path(path))
        self.free = GiB


def test_test_sh_decides_before_setup_and_gates_after_it():
    lines = (REPO / "scripts" / "test.sh").read_text().splitlines()
    before = lines.index('"$PYTHON" scripts/sglang_expected.py before')
    setup = lines.index("scripts/setup.sh")
    after = lines.index('"$PYTHON" scripts/sglang_expected.py after')
    pytest_line = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert before < setup < after < pytest_line
    assert "set -euo pipefail" in lines  # the after step's exit 1 ends the run
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec scripts/test.sh")


@pytest.mark.parametrize("system,code", [("Linux", 1), ("Darwin", 0)])
def test_the_integration_conftest_fails_a_session_whose_real_sglang_tests_skipped(tmp_path, system, code):
    """The hook in tests/integration/conftest.py, in a pytest of its own with the machine's facts fixed."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""\
        import dataclasses
        from scripts import sglang_expected
        from tests.unit.scripts.test_sglang_expected import LINUX
        sglang_expected.gather = lambda: dataclasses.replace(LINUX, system={system!r})
        """))
    (tmp_path / "test_real.py").write_text(textwrap.dedent("""\
        import pytest

        def require_sglang():
            pytest.skip("real SGLang unavailable on this machine: could not be installed")

        def test_served():
            require_sglang()

        def test_skipped_for_another_reason():
            pytest.skip("something else")

        def test_passes():
            pass
        """))
    (tmp_path / "test_other.py").write_text("import pytest\n\ndef test_browser():\n    pytest.skip('no chromium')\n")
    env = {k: v for k, v in os.environ.items() if k != se.OVERRIDE}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.integration.conftest", "-q", "-p",
                           "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == code, out
    assert "1 passed, 3 skipped" in out
    if code:
        assert "2 real-SGLang test(s) skipped on a machine where SGLang 0.5.23 should install" in out
        assert "test_real.py::test_served" in out and "test_real.py::test_skipped_for_another_reason" in out
        assert "test_browser" not in out.split("real SGLang expected")[1]
    else:
        assert "real SGLang expected" not in out
