"""The example scripts run as a user would run them, and say what they claim."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_agrees_with_pinocchio():
    out = run("quickstart.py")
    errors = [float(x) for x in re.findall(r"max \|Δ\| = ([0-9.e+-]+)", out)]
    assert len(errors) == 3 and max(errors) < 1e-9


def test_stick_slip_example_stops_joints_and_plots(tmp_path):
    out = run("friction_stick_slip.py", str(tmp_path / "stick.png"))
    assert out.count("and stays") >= 2
    assert "never increases: True" in out
    assert (tmp_path / "stick.png").stat().st_size > 10_000
