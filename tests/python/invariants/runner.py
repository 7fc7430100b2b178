"""Runs a scenario through gpusched's Python API in a forked child, twice, writing every output
(events, jobs, timeseries, fragmentation, summary, and placements.csv from Result.placements).

A fork isolates the test process from a run that aborts (an internal assertion is SIGABRT):
the parent reports the signal and the child's stderr instead of dying with it.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional


@dataclass
class RunOutcome:
    ok: bool
    detail: str
    first: Path
    second: Path


def _write_run(doc: Dict[str, Any], out: Path) -> None:
    import gpusched

    r = gpusched.run(doc)
    r.write(out)
    r.placements.to_csv(out / "placements.csv", index=False)


def run_twice(doc: Dict[str, Any], out: Path) -> RunOutcome:
    """Runs `doc` twice into out/a and out/b (in a child process); ok=False with the reason when
    the child raised, died from a signal or exited non-zero."""
    first, second = out / "a", out / "b"
    err_path = out / "child-stderr.txt"
    out.mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            import faulthandler

            faulthandler.disable()   # an abort is reported by the parent, not as a Python dump
            fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 2)
            _write_run(doc, first)
            _write_run(doc, second)
        except BaseException:
            traceback.print_exc(file=sys.stderr)
            code = 3
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    err = err_path.read_text(errors="replace") if err_path.exists() else ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return RunOutcome(False, f"the run died from signal {signal.Signals(sig).name}: {err.strip()[-2000:]}", first, second)
    if os.WEXITSTATUS(status) != 0:
        return RunOutcome(False, f"the run raised: {err.strip()[-3000:]}", first, second)
    return RunOutcome(True, "", first, second)


def differing_files(a: Path, b: Path) -> List[str]:
    """Names of files that differ between two output folders (or exist in one only)."""
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    out: List[str] = []
    for n in names:
        pa, pb = a / n, b / n
        if not pa.exists() or not pb.exists() or pa.read_bytes() != pb.read_bytes():
            out.append(n)
    return out


def preload() -> Optional[str]:
    """Imports what a child needs once in the parent, so forks start warm."""
    import gpusched  # noqa: F401
    import pandas  # noqa: F401

    return None
