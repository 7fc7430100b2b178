"""The public traces in ../shared/traces are read from there, never committed: no committed file
(fuzz seeds, test data, examples) may hold a row of theirs verbatim. Seeds and test rows are
written in each format's layout with values of our own."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = Path(os.environ.get("GPUSCHED_TRACES_DIR", ROOT.parent / "shared" / "traces"))
#: Shorter lines (headers' fragments, "0,1,0") match by chance.
MIN_LEN = 20


def _committed_text_files() -> List[Path]:
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts
                 and "build" not in p.parts]
    keep = []
    for n in names:
        p = ROOT / n
        if p.suffix.lower() in {".csv", ".json", ".jsonl", ".txt", ".swf", ".yaml", ".yml", ""} and p.is_file() \
                and p.stat().st_size < 4_000_000:
            keep.append(p)
    return keep


def _trace_lines() -> Set[str]:
    lines: Set[str] = set()
    for p in TRACES.rglob("*"):
        if p.is_file() and p.name != "LICENSE" and p.stat().st_size < 400_000_000:
            with p.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    line = line.rstrip("\r\n")
                    if len(line) >= MIN_LEN:
                        lines.add(line)
    return lines


def test_no_committed_file_holds_a_row_of_a_public_trace() -> None:
    if not TRACES.is_dir():
        pytest.skip(f"no traces at {TRACES} (set GPUSCHED_TRACES_DIR)")
    rows = _trace_lines()
    assert rows, f"read no rows from {TRACES}"
    found: Dict[str, List[Tuple[int, str]]] = {}
    for p in _committed_text_files():
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for i, line in enumerate(text.splitlines(), 1):
            line = line.rstrip("\r")
            if i > 1 and len(line) >= MIN_LEN and line in rows:   # line 1: a header may match
                found.setdefault(str(p.relative_to(ROOT)), []).append((i, line[:60]))
    assert not found, f"rows copied from {TRACES}: {found}"
