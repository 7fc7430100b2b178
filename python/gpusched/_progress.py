"""Progress bars with an ETA for sweeps and experiments (private).

``progress=None`` (the default of the public functions) shows a bar only when someone is
watching: stderr is a terminal, or the code runs in a Jupyter notebook. ``True`` forces a bar
(also into a log file), ``False`` silences it. The bar is ``tqdm.auto`` (a widget in notebooks)
when tqdm is installed, else one line on stderr rewritten in place with done/total, elapsed
time and the ETA. tqdm is imported only when a bar is shown, so ``import gpusched`` stays fast.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional, TextIO


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell); never imports IPython itself."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - odd IPython builds
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def want_progress(progress: Optional[bool]) -> bool:
    """Resolves a ``progress`` argument: None = only on a terminal or in a notebook."""
    if progress is not None:
        return bool(progress)
    if in_notebook():
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class _LineBar:
    """The fallback without tqdm: ``desc: 3/10 (30%) 00:04 elapsed, ETA 00:09`` on stderr."""

    def __init__(self, total: int, desc: str, stream: TextIO) -> None:
        self.total, self.desc, self.stream = total, desc, stream
        self.n = 0
        self.t0 = time.monotonic()
        self.last = -1.0
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < 0.5 and self.n < self.total:
            return
        self.last = now
        elapsed = now - self.t0
        eta = "?" if self.n == 0 else _clock(elapsed / self.n * (self.total - self.n))
        pct = 100.0 * self.n / self.total if self.total else 100.0
        self.stream.write(f"\r{self.desc}: {self.n}/{self.total} ({pct:.0f}%) {_clock(elapsed)} elapsed, ETA {eta}")
        self.stream.flush()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._draw()

    def close(self) -> None:
        self._draw(force=True)
        self.stream.write("\n")
        self.stream.flush()


class Progress:
    """A bar over ``total`` tasks, or nothing when disabled. Use as a context manager::

        with Progress(len(tasks), "sweep", want_progress(progress)) as bar:
            for _ in as_completed(futures):
                bar.update()
    """

    def __init__(self, total: int, desc: str, enabled: bool, unit: str = "run") -> None:
        self.enabled = enabled and total > 0
        self.done = 0
        self._bar: Any = None
        if not self.enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self._bar = _LineBar(total, desc, sys.stderr)
        else:
            self._bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)

    def update(self, n: int = 1) -> None:
        """Marks ``n`` more tasks done."""
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def set_done(self, done: int) -> None:
        """Moves the bar to ``done`` tasks (for callbacks that report a running count)."""
        if done > self.done:
            self.update(done - self.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
