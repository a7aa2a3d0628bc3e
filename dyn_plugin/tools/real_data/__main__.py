"""``python -m dyn_plugin.tools.real_data [--data DIR] [--out DIR] [--panda FILE] [--franka SLOW MIDDLE HIGH]``:
regenerate the real-data report (:mod:`dyn_plugin.tools.real_data`).  Progress on stderr;
exit 0, or 2 with one line on stderr for bad input (a missing file, a bad log)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...errors import DynPluginError
from ..cli.common import EXIT_OK, EXIT_USAGE


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyn_plugin.tools.real_data", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data", metavar="DIR",
                        help="folder of the measured data (panda_gaz2019/, franka_joint_friction/); default ../shared/data")
    parser.add_argument("--out", default="validation/real", metavar="DIR", help="report folder (default validation/real)")
    parser.add_argument("--panda", metavar="FILE", help="the Panda log (default DIR/panda_gaz2019/exciting_trajectory_1.npz)")
    parser.add_argument("--franka", nargs=3, metavar=("SLOW", "MIDDLE", "HIGH"),
                        help="the Franka joint's three files (default DIR/franka_joint_friction/joint2_*.npz)")
    args = parser.parse_args(argv)
    try:
        written = run(args)
    except (DynPluginError, OSError) as exc:
        print(f"real_data: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def run(args) -> list:
    from ...errors import InputError
    from ...friction.laws import FRICTION_LAWS
    from ..activity import activity
    from . import franka, panda, report

    log = Path(args.panda) if args.panda else panda.default_log(Path(args.data))
    files = dict(zip(franka.SPEEDS, map(Path, args.franka))) if args.franka else franka.default_files(Path(args.data))
    missing = [str(path) for path in (log, *files.values()) if not path.is_file()]
    if missing:
        raise InputError(f"no file {missing[0]} (give --data DIR, the folder holding panda_gaz2019/ and "
                         "franka_joint_friction/, or --panda / --franka)")
    model = panda.panda_model()
    steps = len(panda.METHODS) * (len(panda.FRICTION_SETS) + len(FRICTION_LAWS)) + len(FRICTION_LAWS) * len(files)
    start = time.perf_counter()
    with activity("real_data") as shown:
        done = shown.counter(steps, "real data")
        panda_result = panda.panda_study(log, model, laws=FRICTION_LAWS, progress=done)
        franka_result = franka.franka_study(files, laws=FRICTION_LAWS, progress=done)
    return report.write_report(args.out, panda_result, franka_result, seconds=time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
