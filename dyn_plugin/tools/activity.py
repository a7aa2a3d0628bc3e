"""What a long command is doing, on stderr, at least every :data:`HEARTBEAT` seconds.

The library is quiet: it names its long steps (generating a robot's code, compiling it)
as messages of the ``dyn_plugin`` logger (:mod:`logging`; INFO for a step, DEBUG for its
parts), which Python shows nowhere unless a handler is installed; and numba announces
every function it compiles through its event API (``numba.core.event``, kind
``"numba:compile"``, one START and one END per function; numba's documentation, "Event
API").  Loading a kernel from numba's on-disk cache is no event.  While a command runs
under :func:`activity`, both are shown:

* on a terminal, a transient rich progress display: what is being compiled or generated,
  the steps done of :meth:`Activity.counter`, the elapsed time;
* in a pipe or a log file, one line per step (INFO message or counter step) and, after
  :data:`HEARTBEAT` seconds without a line, a line naming the function numba is compiling
  (or the last step), how many functions it has compiled and the time since the start.

A single function can take numba 15 s (the generated derivatives of a 6-joint robot), so
the heartbeat, a thread of its own, is what bounds the silence, not the steps.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Callable, Optional

from rich.markup import escape

from .output import one_line

__all__ = ["HEARTBEAT", "Activity", "activity"]

HEARTBEAT = 5.0            # s without a line on stderr (not a terminal) before the heartbeat speaks
LIBRARY_LOGGER = "dyn_plugin"
GENERATED_PREFIX = "_dyn_plugin_symbolic_"   # module names of generated code (symbolic/code_cache.py)


class Activity:
    """The state shown: the last step, the functions numba is compiling now (innermost
    last), how many it has compiled.  Without ``bar``, :meth:`line` prints on stderr; with
    ``bar`` (a rich Progress, on a terminal) the bar's description shows the state."""

    def __init__(self, command: str, bar=None, clock: Callable[[], float] = time.monotonic):
        self.command, self.bar, self.clock = command, bar, clock
        self.start = self.last_line = clock()
        self.step_text = "starting"
        self.compiling: list = []       # (function, where) numba compiles now, innermost last
        self.compiled = 0
        self._lock = threading.RLock()
        self._task = bar.add_task(escape(command), total=None, count="") if bar is not None else None

    def elapsed(self) -> float:
        return self.clock() - self.start

    def line(self, text: str) -> None:
        """One line on stderr, ``<command>: <text> (<elapsed> s)`` (not on a terminal)."""
        with self._lock:
            if self.bar is None:
                print(f"{self.command}: {one_line(text)} ({self.elapsed():.0f} s)", file=sys.stderr, flush=True)
            self.last_line = self.clock()

    def step(self, text: str, shown: bool = True) -> None:
        """A library step begins: remembered for the heartbeat, shown at once if ``shown``."""
        with self._lock:
            self.step_text = text
            if shown:
                self.line(text)
            self._describe()

    def fraction(self, done: int, total: int) -> None:
        """``done`` of ``total`` steps of the command (its bar on a terminal)."""
        if self.bar is not None:
            self.bar.update(self._task, completed=done, total=total, count=f"{done}/{total}")

    def compile_started(self, function: str, where: str) -> None:
        with self._lock:
            self.compiling.append((function, where))
            self._describe()

    def compile_ended(self) -> None:
        with self._lock:
            if self.compiling:
                _, where = self.compiling.pop()
                self.compiled += not _numba_own(where)
            self._describe()

    def now(self) -> str:
        """What is going on: the function of dyn_plugin (or of a generated module) numba is
        compiling, innermost first, numba's own helpers skipped; or else the last step."""
        with self._lock:
            ours = [entry for entry in self.compiling if not _numba_own(entry[1])] or self.compiling
            if ours:
                function, where = ours[-1]
                return f"numba is compiling {function} ({where}); {self.compiled} functions compiled so far"
            return f"still {self.step_text}"

    def beat(self) -> None:
        """The heartbeat's line, when :data:`HEARTBEAT` seconds passed without one."""
        with self._lock:
            if self.bar is None and self.clock() - self.last_line >= HEARTBEAT:
                self.line(self.now())

    def _describe(self) -> None:
        if self.bar is not None:
            self.bar.update(self._task, description=escape(f"{self.command}: {self.now()}"))

    def counter(self, total: int, what: str) -> Callable[[str], None]:
        """``callback(label)`` for each of ``total`` steps done: a bar on a terminal, else
        a line ``k/total done, label``."""
        done = []
        self.step(f"working on step 1 of {total}", shown=False)
        task = self.bar.add_task(escape(what), total=total, count=f"0/{total}") if self.bar is not None else None

        def report(label: str) -> None:
            done.append(label)
            self.step(f"working on step {len(done) + 1} of {total}" if len(done) < total else what, shown=False)
            if self.bar is not None:
                self.bar.update(task, advance=1, description=escape(label), count=f"{len(done)}/{total}")
            else:
                self.line(f"{len(done)}/{total} done, {label}")
        return report


def _numba_listener(activity: Activity):
    """A listener of numba's "numba:compile" events that tells ``activity``."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev):
            activity.compile_started(*_compiled_function(ev.data["dispatcher"]))

        def on_end(self, ev):
            activity.compile_ended()
    return Listener()


def _numba_own(where: str) -> bool:
    """A function of numba itself (its implementations of numpy and the builtins)."""
    return where == "numba" or where.startswith("numba.")


def _compiled_function(dispatcher) -> tuple:
    """(function name, where it comes from) of a dispatcher being compiled: a generated
    module names its robot (its ``ROBOT``), other modules their dotted name."""
    function = getattr(dispatcher, "py_func", None)
    name = getattr(function, "__qualname__", str(dispatcher))
    module = getattr(function, "__module__", "") or ""
    if module.startswith(GENERATED_PREFIX):
        robot = getattr(sys.modules.get(module), "ROBOT", None)
        kind = "derivatives" if "_derivatives_" in module else "dynamics"
        return name, f"{kind} code generated for {robot!r}" if robot is not None else "generated code"
    return name, module


class _Handler(logging.Handler):
    """The library's messages to :meth:`Activity.step`: INFO and above shown, DEBUG remembered."""

    def __init__(self, activity: Activity):
        super().__init__(logging.DEBUG)
        self.activity = activity

    def emit(self, record: logging.LogRecord) -> None:
        self.activity.step(record.getMessage(), shown=record.levelno >= logging.INFO)


@contextlib.contextmanager
def activity(command: str, console=None):
    """Show what ``command`` is doing while the block runs (module docstring); yields the
    :class:`Activity` (its :meth:`~Activity.counter` for steps of known number).
    ``console``: the rich Console of stderr (default: a new one)."""
    from numba.core import event
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = console if console is not None else Console(stderr=True, emoji=False)
    logger = logging.getLogger(LIBRARY_LOGGER)
    with contextlib.ExitStack() as stack:
        bar: Optional[Progress] = None
        if err.is_terminal:
            bar = stack.enter_context(Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                               TextColumn("{task.fields[count]}"), TimeElapsedColumn(), console=err,
                                               transient=True))
        state = Activity(command, bar)
        stack.enter_context(event.install_listener("numba:compile", _numba_listener(state)))
        handler, level = _Handler(state), logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        stack.callback(logger.setLevel, level)
        stack.callback(logger.removeHandler, handler)
        stop = threading.Event()
        beating = threading.Thread(target=_heartbeat, args=(state, stop), name=f"{command} heartbeat", daemon=True)
        beating.start()
        stack.callback(beating.join)
        stack.callback(stop.set)
        yield state


def _heartbeat(state: Activity, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        state.beat()
