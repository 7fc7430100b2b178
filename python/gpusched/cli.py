"""The ``gpusched`` command (also ``python -m gpusched``).

The C++ command line does the work (run, demo, validate, policies, version; exit codes 0 ok,
1 bad input, 2 wrong usage, 3 outputs not written, 130 interrupted: Ctrl-C or SIGTERM prints one
line, ``gpusched: interrupted; nothing was written``, and no traceback). After a successful ``run`` or ``demo``, when
matplotlib is installed, this wrapper also draws ``timeseries.png`` into the output folder and
links it from ``report.md``. Plotting never changes the exit code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from . import _core

#: Options of `run` / `demo` that take a value (the rest are flags).
_VALUE_OPTIONS = ("--out", "--seed", "--progress", "--profile", "--traces", "--workload", "--policies", "--seeds", "--jobs",
                  "--max-arrived", "--format", "--from", "--to", "--trace", "--cluster", "--placement", "--restart-overhead",
                  "--within-queue", "--quantum", "--distribution", "--starvation", "--thresholds")


def _option(args: Sequence[str], name: str) -> Optional[str]:
    """The value of ``--name VALUE`` or ``--name=VALUE`` (last one wins), or None."""
    value = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(name + "="):
            value = a[len(name) + 1 :]
    return value


def _positionals(args: Sequence[str]) -> List[str]:
    out: List[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _VALUE_OPTIONS:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def _output_dir(args: Sequence[str]) -> Optional[Path]:
    """Where a successful `run` / `demo` wrote its files (the C++ defaults: out/<scenario name>,
    out/demo), or None for other subcommands."""
    pos = _positionals(args)
    if not pos or pos[0] not in ("run", "demo"):
        return None
    rest = args[args.index(pos[0]) + 1 :]
    out = _option(rest, "--out")
    if out:
        return Path(out)
    if pos[0] == "demo":
        return Path("out") / "demo"
    scenario = _positionals(rest)
    if not scenario:
        return None
    with open(scenario[0], encoding="utf-8") as f:
        name = json.load(f).get("name", "scenario")
    return Path("out") / str(name)


def add_plot(out_dir: Path) -> Path:
    """Draws out_dir/timeseries.png from timeseries.csv and appends a "## Plot" section to
    report.md. Returns the PNG path. Raises ImportError without matplotlib."""
    from .plotting import plot_timeseries, read_timeseries_csv

    _checkpoint()
    timeseries = read_timeseries_csv(out_dir / "timeseries.csv")
    _checkpoint()
    title = ""
    summary_path = out_dir / "summary.json"
    if summary_path.exists():
        with open(summary_path, encoding="utf-8") as f:
            s = json.load(f)
        title = f"{s['scenario']['name']} (seed {s['seed']}, profile {s['profile']})"
    png = out_dir / "timeseries.png"
    _replace_atomically(png, lambda tmp: plot_timeseries(timeseries, title=title, path=tmp))
    report = out_dir / "report.md"
    if report.exists():
        text = report.read_text(encoding="utf-8")
        if "![](timeseries.png)" not in text:
            sep = "" if text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
            _write_text_atomically(report, text + sep + "## Plot\n\n![](timeseries.png)\n")
    return png


def _replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` writes a hidden file beside ``path``, which then replaces ``path`` in one
    rename: an interrupted write never leaves a truncated file under the real name."""
    global _scratch
    tmp = path.with_name(f".{path.name}.gpusched-tmp-{os.getpid()}{path.suffix}")
    _scratch = tmp
    try:
        write(tmp)
        _checkpoint()
        os.replace(tmp, path)
    finally:
        _scratch = None
        if tmp.exists():
            tmp.unlink()


def _write_text_atomically(path: Path, text: str) -> None:
    """``path.write_text(text)`` through a hidden file and a rename (see _replace_atomically)."""
    _replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _experiment_dir(args: Sequence[str]) -> Optional[Path]:
    """Where a successful `experiment fgd` wrote its files, or None for other subcommands."""
    pos = _positionals(args)
    if pos[:2] != ["experiment", "fgd"]:
        return None
    out = _option(args, "--out")
    if out:
        return Path(out)
    workload = _option(args, "--workload") or "default"
    name = Path(workload).stem if ("/" in workload or workload.endswith(".csv")) else workload
    return Path("out") / f"fgd-{name}"


def _tiresias_dir(args: Sequence[str]) -> Optional[Path]:
    """Where a successful `experiment tiresias` wrote its files, or None for other subcommands."""
    if _positionals(args)[:2] != ["experiment", "tiresias"]:
        return None
    out = _option(args, "--out")
    return Path(out) if out else Path("out") / "tiresias"


def add_tiresias_plot(out_dir: Path) -> Path:
    """Draws out_dir/jct-cdf.png (the JCT CDF per policy) from summary.csv and jobs-<policy>.csv."""
    from .experiments import read_tiresias_outputs

    _checkpoint()
    result = read_tiresias_outputs(out_dir)
    _checkpoint()
    png = out_dir / "jct-cdf.png"
    _replace_atomically(png, lambda tmp: result.plot_cdf(tmp))
    return png


def add_fgd_plot(out_dir: Path) -> Path:
    """Draws out_dir/fgd.png from curve.csv and links it from report.md. Returns the PNG path."""
    from .experiments import read_fgd_outputs

    _checkpoint()
    result = read_fgd_outputs(out_dir)
    _checkpoint()
    png = out_dir / "fgd.png"
    title = f"FGD experiment ({out_dir.name}), {result.curve['seed'].nunique()} seeds"
    _replace_atomically(png, lambda tmp: result.plot(tmp, title=title))
    report = out_dir / "report.md"
    if report.exists():
        text = report.read_text(encoding="utf-8")
        if "![](fgd.png)" not in text:
            _write_text_atomically(report, text.rstrip("\n") + "\n\n## Plot\n\n![](fgd.png)\n")
    return png


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line with ``argv`` (default: sys.argv[1:]); returns the exit code (130
    when interrupted: Ctrl-C or SIGTERM, reported in one line on stderr, never a traceback)."""
    args = list(sys.argv[1:] if argv is None else argv)
    started = False
    previous = _sigterm_as_keyboard_interrupt()
    blocked: Set[int] = set()
    deferred: Dict[int, Any] = {}
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        # While a run goes, the C++ command line handles SIGINT / SIGTERM itself (exit 130). The
        # signals are blocked across the hand-over: one sent now stays pending until the C++
        # side has installed its handlers and unblocks them (it stops the run then), or, for a
        # command without handlers, until cli_main returns (Python's handler runs then).
        blocked = _block_interrupt_signals()
        started = True
        try:
            rc = _core.cli_main(args)
        finally:
            # From here on a signal only asks for a stop, which _checkpoint() carries out between
            # the plot's steps: KeyboardInterrupt raised inside an import or inside matplotlib
            # leaves extension modules half set up, and the interpreter can then abort or raise
            # the interrupt a second time as it exits (seen in CI: "Fatal Python error:
            # PyThreadState_Get" at finalisation). Installed while the signals are still blocked,
            # so one sent during the hand-over is deferred too.
            deferred = _defer_interrupt_signals()
            if blocked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
                blocked = set()
        return _after(args, rc)
    except KeyboardInterrupt:
        # Ctrl-C outside the C++ run: before the command started (nothing written), or after it
        # (while plotting: the run's files are complete then).
        print("gpusched: interrupted" if started else "gpusched: interrupted; nothing was written", file=sys.stderr)
        return 130
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
        for signum, handler in deferred.items():
            signal.signal(signum, handler)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


_INTERRUPT_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _block_interrupt_signals() -> Set[int]:
    """Blocks SIGINT and SIGTERM on the main thread (where Python handles signals); returns
    those it blocked (not blocked before), for the caller to unblock."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        return set()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPT_SIGNALS)
    return set(_INTERRUPT_SIGNALS - set(before))


_stop_requested = False   # a signal arrived while the plot was drawn; _checkpoint() stops there
_scratch: Optional[Path] = None   # the hidden file being written, removed by a second signal's exit


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _defer_stop(signum: int, frame: object) -> None:
    """SIGINT / SIGTERM after the C++ run: the first asks for a stop at the next checkpoint;
    a second one ends the process at once (the run's files are complete; only the plot's hidden
    file, if any, is removed), without unwinding through third-party code."""
    global _stop_requested
    if not _stop_requested:
        _stop_requested = True
        return
    try:
        if _scratch is not None and _scratch.exists():
            _scratch.unlink()
        os.write(2, b"gpusched: interrupted\n")
    finally:
        os._exit(130)


def _defer_interrupt_signals() -> Dict[int, Any]:
    """Routes SIGINT and SIGTERM to _defer_stop (main thread only; a signal the caller ignores
    stays ignored). Returns the handlers replaced, for the caller to put back."""
    global _stop_requested
    _stop_requested = False
    if threading.current_thread() is not threading.main_thread():
        return {}
    replaced: Dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(signum)
        if current == signal.SIG_IGN or current is None:
            continue
        replaced[signum] = signal.signal(signum, _defer_stop)
    return replaced


def _checkpoint() -> None:
    """Carries out a stop that a signal asked for while the plot was being drawn."""
    if _stop_requested:
        raise KeyboardInterrupt


def _sigterm_as_keyboard_interrupt() -> Any:
    """SIGTERM outside the C++ run (which handles it itself) stops the command as Ctrl-C does,
    so temporary files are cleaned up and it exits 130. Only on the main thread, and only when
    SIGTERM has its default action; returns the handler to put back, or None."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return None
    return signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def _after(args: Sequence[str], rc: int) -> int:
    """After the C++ command line: the plot of a successful run or experiment. A signal during
    it stops at the next checkpoint (KeyboardInterrupt, raised here, never inside matplotlib)."""
    _checkpoint()   # a signal sent while the C++ side had none of its own handlers (or in the hand-back)
    if rc != 0 or any(a in ("-h", "--help", "--version") for a in args):
        return rc
    # The first that applies: an experiment's folder with its table, or a run's with its series.
    plots = ((_tiresias_dir(args), "summary.csv", add_tiresias_plot), (_experiment_dir(args), "curve.csv", add_fgd_plot),
             (_output_dir(args), "timeseries.csv", add_plot))
    try:
        for folder, needs, draw in plots:
            if folder is None or not (folder / needs).exists():
                continue
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                return rc
            _checkpoint()
            png = draw(folder)
            if "--quiet" not in args:
                print(f"  plot       {png}")
            break
    except Exception as exc:  # plotting is a bonus: never fail the command for it
        print(f"gpusched: warning: could not draw the plot: {exc}", file=sys.stderr)
    _checkpoint()
    return rc


if __name__ == "__main__":
    sys.exit(main())
