"""Shared fixtures: where the shared real profiles are, and how to run the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared"))
SHARED_DATA = SHARED / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip (with the reason) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA} (set TB_ROOFLINE_SHARED)")
    return SHARED_DATA


def run_cli(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    """Runs ``tb-roofline`` in a fresh interpreter, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "tb_roofline_plugin.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tb-roofline {' '.join(map(str, args))} failed: {proc.stderr}")
    return proc
