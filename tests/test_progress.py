"""Long work shows progress (issue #32, second pass, item 4): a command never goes silent
for more than 10 s, piped or not, while numba compiles or code is generated; a library
call stays quiet (dyn_plugin/tools/activity.py)."""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

import dyn_plugin as dp
from dyn_plugin.symbolic import code_cache
from dyn_plugin.tools import activity as act
from urdf_factory import random_tree_urdf, write_urdf

LONGEST_SILENCE = 10.0   # s: the bound on a gap between two lines of output


def timestamped_lines(command, env, timeout=300):
    """Run ``command``; its stdout and stderr lines, each with the seconds since the start
    at which it arrived, and the exit code.  The process's start and end count as lines."""
    start = time.monotonic()
    arrived = queue.Queue()

    def pump(stream):
        for line in stream:
            arrived.put((time.monotonic() - start, line.rstrip("\n")))
        arrived.put(None)

    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          bufsize=1) as process:
        for stream in (process.stdout, process.stderr):
            threading.Thread(target=pump, args=(stream,), daemon=True).start()
        lines, open_streams = [(0.0, "<start>")], 2
        while open_streams:
            item = arrived.get(timeout=timeout)
            if item is None:
                open_streams -= 1
            else:
                lines.append(item)
        code = process.wait(timeout=timeout)
    lines.append((time.monotonic() - start, "<exit>"))
    return sorted(lines), code


def test_validate_of_a_new_robot_is_never_silent_for_10_s_in_a_pipe(tmp_path):
    """A URDF never seen, an empty code cache: generating and numba-compiling the code of
    this 2-joint robot takes ~15 s, 20-60 s for 3-6 joints (one function alone up to 15 s);
    without the heartbeat the first line after the announcement came 15 s later.  A line
    at least every 10 s, piped.  (numba's cache of dyn_plugin's own kernels stays as it is:
    emptying it costs 5-8 minutes.)"""
    urdf = write_urdf(tmp_path, random_tree_urdf(11, 2, name="never_seen"), "never_seen.urdf")
    env = dict(os.environ, DYN_PLUGIN_CACHE=str(tmp_path / "code"))
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "dyn_plugin.tools.cli", "validate", "--robot", str(urdf), "--backend",
               "symbolic_numba", "--against", "pinocchio", "--quantity", "tau", "M", "dtau", "--samples", "10"]
    lines, code = timestamped_lines(command, env)
    text = "\n".join(f"{t:6.1f} {line}" for t, line in lines)
    assert code == 0, text
    assert any("generating numba code for robot 'never_seen'" in line for _, line in lines), text
    gaps = [(later - earlier, line) for (earlier, _), (later, line) in zip(lines, lines[1:])]
    assert max(gaps)[0] <= LONGEST_SILENCE, text


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_heartbeat_names_the_function_being_compiled_and_skips_numbas_own(capsys):
    clock = _Clock()
    shown = act.Activity("validate", clock=clock)
    shown.step("compiling the code of robot 'r'")
    shown.compile_started("_mass_matrix_lanes", "dynamics code generated for 'r'")
    shown.compile_started("ol_np_empty.<locals>.impl", "numba.np.arrayobj")
    clock.now = act.HEARTBEAT - 0.1
    shown.beat()
    assert capsys.readouterr().err == "validate: compiling the code of robot 'r' (0 s)\n"   # too soon
    clock.now = act.HEARTBEAT
    shown.beat()
    assert capsys.readouterr().err == ("validate: numba is compiling _mass_matrix_lanes (dynamics code generated "
                                       "for 'r'); 0 functions compiled so far (5 s)\n")
    shown.compile_ended()
    shown.compile_ended()
    clock.now = 2 * act.HEARTBEAT
    shown.beat()
    assert capsys.readouterr().err == ("validate: still compiling the code of robot 'r' (10 s)\n")
    assert shown.compiled == 1       # ours, not numba's helper


def test_the_activity_shows_the_librarys_steps_and_numbas_compilations(capsys):
    import numba

    with act.activity("demo") as shown:
        logging.getLogger("dyn_plugin.symbolic.emit").debug("a part of a step")
        logging.getLogger("dyn_plugin.backends").info("a step")
        numba.njit(lambda x: x + 1)(1)           # a new function: one compilation
        assert shown.compiled == 1
    assert capsys.readouterr().err.splitlines() == ["demo: a step (0 s)"]
    assert logging.getLogger("dyn_plugin").handlers == []         # the command's handler is gone


def test_a_library_call_is_quiet_and_says_its_steps_to_logging(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("DYN_PLUGIN_CACHE", str(tmp_path))
    model = dp.load_robot("scara")
    with caplog.at_level(logging.INFO, logger="dyn_plugin"):
        module, path, hit = code_cache.load_generated(model, "python")
    assert not hit and path.parent == tmp_path
    captured = capsys.readouterr()
    assert captured.out == captured.err == ""
    assert [r.getMessage() for r in caplog.records] == [
        f"generating python code for robot 'scara' (none in the cache {tmp_path})",
        "checking the code generated for robot 'scara' against the Newton-Euler recursion"]


@pytest.fixture(autouse=True)
def _no_handler_left():
    yield
    assert logging.getLogger("dyn_plugin").handlers == []


def test_on_a_terminal_the_activity_is_a_progress_display_not_lines(capsys):
    import io

    from rich.console import Console

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=200)
    with act.activity("validate", console=terminal) as shown:
        count = shown.counter(2, "validating")
        shown.compile_started("_mass_matrix_lanes", "dynamics code generated for 'r'")
        shown.bar.refresh()
        count("r / states 1-10")
        shown.compile_ended()
    assert capsys.readouterr().err == ""
    drawn = screen.getvalue()
    assert "numba is compiling _mass_matrix_lanes (dynamics code generated for 'r')" in drawn
    assert "1/2" in drawn
