"""scripts/setup.sh's one argument (all, or demo: what scripts/demo.sh needs): anything else is refused with exit 2
and a usage line before the script touches the checkout."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_an_unknown_scope_is_refused_before_anything_is_written(tmp_path):
    log = REPO / ".engine" / "setup.log"
    before = log.stat().st_mtime_ns if log.exists() else None
    proc = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh"), "tests-only"], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2
    assert "usage: scripts/setup.sh [all|demo] (got 'tests-only')" in proc.stderr
    assert (log.stat().st_mtime_ns if log.exists() else None) == before


def test_the_demo_sets_up_its_own_scope_and_the_tests_everything():
    assert "scripts/setup.sh demo" in (REPO / "scripts" / "demo.sh").read_text()
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    assert "scripts/setup.sh\n" in test_sh and "setup.sh demo" not in test_sh
