"""``dyn-plugin identify ROBOT --log FILE | --data FILE.npz | --simulate``: the identification
report.  With ``--log``, a raw robot log is prepared (:func:`dyn_plugin.prepare_log`), the
model fitted on its first part and scored on the rest (:func:`dyn_plugin.holdout_rms`).

JSON (``--json``): the result's ``to_dict()``; with ``--log`` also ``log`` (how it was
prepared: cutoff_hz, cutoff_from, motion_band_hz, rate_hz, grid_rate_hz, trim_s, qd_from,
samples), ``fit_samples``, ``holdout`` (the fraction), ``holdout_rms`` ({joint name: N·m}
in joint order), ``holdout_rms_total`` (N·m, √ of the mean over joints of each joint's
mean square error) and ``holdout_samples``.
"""

from __future__ import annotations

import contextlib
import json

from ...errors import InputError
from ..output import one_line, write_or_print
from .common import EXIT_OK
from .robot import load_model

__all__ = ["command"]

LOG_ONLY = ("cutoff", "rate", "trim", "holdout")


def command(args) -> int:
    """The ``identify`` verb (``args`` from :func:`.parser.build_parser`)."""
    from ...identification import friction_terms, identify, plot_fit

    given = [name for name in LOG_ONLY if getattr(args, name, None) is not None]
    if given and not args.log:
        raise InputError(f"--{given[0]} applies to --log (preparing a raw log); --data and --simulate are used as given")
    model = load_model(args)
    terms = friction_terms(args.friction)
    if args.log:
        return _from_log(args, model, terms)
    q, qd, qdd, tau, t, bearing, nominal = _recorded(args, model, terms)
    result = identify(model, q, qd, qdd, tau, friction=terms, bearing=bearing, nominal=nominal,
                      physical=args.physical)
    return _report(args, result, result.to_dict(), lambda path: plot_fit(result, path, t))


def _from_log(args, model, terms) -> int:
    from ...identification import holdout_rms, identify, load_log, plot_holdout, prepare_log

    if "bearing" in terms:
        raise InputError("--friction bearing needs the joint wrenches of a nominal model and a bearing geometry; "
                         "with --log identify viscous, coulomb, armature or load (load-dependent friction from the "
                         "joint wrenches of a first fit, no geometry needed)")
    raw = load_log(args.log)
    if raw["q"].ndim == 2 and raw["q"].shape[1] != model.n:
        raise InputError(f"--log {args.log}: q has {raw['q'].shape[1]} columns and {model.name!r} has {model.n} "
                         f"joints ({', '.join(model.joint_names)})" + _lock_hint(model, raw["q"].shape[1]))
    log = prepare_log(**raw, cutoff=args.cutoff, rate=args.rate, trim=args.trim)
    holdout = 0.4 if args.holdout is None else args.holdout
    fit, held = log.split(holdout)
    _check_enough(args, model, terms, len(fit))
    with _status(f"identify: {log.describe()}; fitting on the first {len(fit)} samples"):
        result = identify(model, fit, friction=terms, physical=args.physical)
    score = holdout_rms(result, held)
    data = {**result.to_dict(), "log": log.to_dict(), "fit_samples": len(fit), "holdout": holdout,
            **score.to_dict(model.joint_names)}
    lines = [log.describe(), result.report(),
             f"held-out torque RMS on the last {100 * holdout:g} % ({len(held)} samples): total "
             f"{score.total:.4g}" + ("" if "prismatic" in model.joint_types else " N·m"),
             *(f"  {name:<24} {value:.4g} {'N' if kind == 'prismatic' else 'N·m'}"
               for name, kind, value in zip(model.joint_names, model.joint_types, score.per_joint))]
    return _report(args, result, data, lambda path: plot_holdout(result, held, path, model.joint_names),
                   "\n".join(lines))


@contextlib.contextmanager
def _status(text: str):
    """``text`` as a transient status line on a terminal's stderr while the fit runs (gone
    afterwards, so that an error is still the one line on stderr); nothing elsewhere."""
    from rich.console import Console
    from rich.markup import escape

    err = Console(stderr=True, emoji=False)
    if not err.is_terminal:
        yield
        return
    with err.status(escape(one_line(text))):
        yield


def _report(args, result, data: dict, plot, text=None) -> int:
    """Write the outputs asked for (URDF, JSON, plot) and print the report (``text``, default
    the result's); the identified model is made (or refused) before anything is written."""
    urdf = result.to_model() if args.urdf else None
    if urdf is not None:
        from ...urdf import write_urdf

        write_urdf(urdf, args.urdf)
        data = {**data, "urdf": str(args.urdf)}
    if args.json:
        write_or_print(args.json, json.dumps(data, indent=2))
    if args.json != "-":
        print(text if text is not None else result.report())
        if urdf is not None:
            print(f"wrote {args.urdf}")
    if args.plot:
        path = plot(args.plot)
        if args.json != "-":
            print(f"wrote {path}")
    return EXIT_OK


def _check_enough(args, model, terms, samples: int) -> None:
    """Refuse, before the fit, a fit part with no more equations (samples × joints) than
    parameters (base inertial + friction)."""
    import numpy as np

    from ...identification import base_parameters, friction_columns

    still = np.zeros((1, model.n))
    parameters = base_parameters(model).rank + len(friction_columns(model, still, still, still, terms, loads=model)[1])
    if samples * model.n <= parameters:
        raise InputError(f"--log {args.log}: the fit part has {samples} samples x {model.n} joints = "
                         f"{samples * model.n} equations for {parameters} parameters; record a longer log, "
                         "give a higher --rate or a smaller --holdout")


def _lock_hint(model, columns: int) -> str:
    extra = model.n - columns
    movable = [name for name in model.joint_names if "finger" in name or "gripper" in name]
    if extra > 0 and movable:
        return "; hold the joints the log does not have fixed, e.g. " + " ".join(f"--lock {m}" for m in movable[:extra])
    return "; give the robot whose joints the log records (--lock JOINT holds a joint fixed)"


def _recorded(args, model, terms):
    """(q, qd, qdd, tau, t, bearing, nominal) of ``--data`` or ``--simulate``."""
    import numpy as np

    from ...friction.parameters import friction_file, load_friction
    from ...identification import dhanaraj_friction, simulate_measurements
    from ...identification.logfile import read_arrays

    bearing = nominal = None
    if "bearing" in terms:
        found = friction_file(model.name)
        if found is None:
            raise InputError(f"--friction bearing needs the bearing geometry of {model.name!r}: a bundled friction file "
                             "with a 'dhanaraj' profile (only the PUMA-560 has one)")
        bearing = load_friction(found, model, profile="dhanaraj")
    if args.simulate:
        if not 0 <= args.noise < 1:
            raise InputError(f"--noise must be a fraction from 0 to 1, got {args.noise:g}")
        friction = dhanaraj_friction(model) if model.name == "puma560" else None
        data = simulate_measurements(model, friction, noise=args.noise, samples=args.samples, seed=args.seed)
        return (data.q, data.qd, data.qdd, data.tau, data.t, bearing if bearing is not None else friction,
                data.rigid_model)
    stored = read_arrays(args.data, ("q", "qd", "qdd", "tau"), optional=("t",))
    t, samples = stored.get("t"), len(stored["q"])
    if t is not None and (t.shape != (samples,) or t.dtype.kind not in "fiu" or not np.all(np.isfinite(t))):
        raise InputError(f"{args.data}: t must be {samples} finite times, one per sample of q (shape ({samples},)), "
                         f"got shape {t.shape}" + ("" if t.shape != (samples,) else " with a non-finite entry"))
    return stored["q"], stored["qd"], stored["qdd"], stored["tau"], t, bearing, nominal
