"""The real-data report written from the studies' numbers: README.md (tables and what they
say), real_data.json (every number), and the figures (:func:`write_report`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...friction.fitting import undetermined_note
from . import plots
from .panda import FRICTION_SETS, LAW_BASE

COMMAND = "python -m dyn_plugin.tools.real_data"
JSON_NAME = "real_data.json"
BAR_SETS = (LAW_BASE, f"{LAW_BASE}+load")
BAR_LAWS = ("sigmoid", "lugre")
"""The Panda bar chart's models beside the published one: the linear friction sets with and
without the load term, the published model's own law (Gaz et al.'s sigmoid) and LuGre."""
SIGNIFICANT = 2.0
"""|value / standard error| at or above which a coefficient is called significant (≈ 95 %
for a normal estimate)."""


def write_report(folder, panda=None, franka=None, command: str = COMMAND, seconds=None) -> list:
    """Write README.md, :data:`JSON_NAME` and the PNG figures of the studies (the returns of
    :func:`.panda_study` and :func:`.franka_study`, either may be None) into ``folder``;
    ``seconds``: how long the studies took (said in the README); returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    took = f" (this run took {seconds / 60:.1f} min)" if seconds is not None else ""
    written, lines = [], ["# Real data: identification and friction laws on measured robots\n",
                          f"Regenerate from the repository root{took}: `{command}` (reads `../shared/data`; "
                          "`--data DIR`, `--out DIR`).  Everything below is written by `dyn_plugin/tools/real_data/` "
                          "from the data; no number is typed by hand except the published figures, quoted with "
                          "their source.\n"]
    if panda is not None:
        written += _panda_figures(folder, panda)
        lines += panda_markdown(panda["summary"])
    if franka is not None:
        written += _franka_figures(folder, franka)
        lines += franka_markdown(franka["summary"])
    data = {key: study["summary"] for key, study in (("panda", panda), ("franka", franka)) if study is not None}
    (folder / JSON_NAME).write_text(json.dumps(data, indent=1))
    (folder / "README.md").write_text("\n".join(lines))
    return [folder / "README.md", folder / JSON_NAME] + written


# -- Panda ----------------------------------------------------------------------------------

def _model_label(entry: dict) -> str:
    return f"{entry['friction']} ({entry['method']})"


def panda_markdown(summary: dict) -> list:
    """The Panda section (markdown lines) of the summary of :func:`.panda_study`."""
    log, published, joints = summary["log"], summary["published"], summary["joints"]
    header = ["model", "method", *(f"j{j + 1}" for j in range(len(joints))), "total"]
    rows = [["published (Gaz et al. 2019)", "penalty-based", *published["per_joint"], published["total"]]]
    rows += [[m["friction"], m["method"], *m["holdout_rms"], m["holdout_rms_total"]] for m in summary["models"]]
    rows += [[f"{law['law']} law on {LAW_BASE}'s β̂", law["method"], *law["holdout_rms"], law["holdout_rms_total"]]
             for law in summary["laws"]]
    out = ["## Franka Emika Panda, the exciting trajectory of Gaz et al. 2019\n",
           f"Log `{log['source']}`: {log['samples']} samples at {log['rate_hz']:g} Hz after a zero-phase 4th-order "
           f"Butterworth at {log['cutoff_hz']:g} Hz on a {log['grid_rate_hz']:g} Hz grid, {log['trim_s']:g} s trimmed "
           f"at each end, q̇ {log['qd_from']} ({_protocol_note(summary)}).  Fitted on the first "
           f"{summary['fit_samples']} samples, scored on the last {summary['holdout_samples']} "
           f"({100 * summary['protocol']['holdout']:g} %).  Robot: example-robot-data's Panda, fingers locked.\n",
           "Held-out torque RMS, N·m (total = √ of the mean over joints of each joint's mean square, the "
           "published figure's definition).  *least squares*: weighted, friction ≥ 0, base parameters; "
           "*physical*: every link's pseudo-inertia positive definite (an SDP).  The laws: fitted per joint, "
           f"with an offset, to τ − Y_b β̂ of the {LAW_BASE} fit of the same method "
           "(`dyn_plugin/tools/real_data/panda.py` says why).\n",
           *_table(header, rows), "", *_panda_findings(summary), ""]
    out += _load_effect(summary)
    out += [f"Published: {published['source']}.\n", "![held-out torques](panda_holdout.png)\n",
            "![held-out RMS per joint](panda_rms.png)\n"]
    return out


def _panda_findings(summary: dict) -> list:
    """Bullets: the best model and law of each method against the published total."""
    published = summary["published"]["total"]
    out = []
    for method in dict.fromkeys(m["method"] for m in summary["models"]):
        entries = [(m["holdout_rms_total"], m["friction"]) for m in summary["models"] if m["method"] == method]
        entries += [(law["holdout_rms_total"], f"the {law['law']} law") for law in summary["laws"]
                    if law["method"] == method]
        best, name = min(entries)
        out.append(f"- {method}: lowest held-out total {best:.4g} N·m ({name}), {100 * best / published:.0f} % of the "
                   f"published model's {published:g} N·m.")
    for law in summary["laws"]:
        for j, fit in enumerate(law["fits"]):
            if fit["undetermined"]:
                out.append(f"- the {law['law']} law ({law['method']}), joint {j + 1}: {undetermined_note(fit)}.")
    return out


def _protocol_note(summary: dict) -> str:
    from .panda import PROTOCOL

    if summary["protocol"] == PROTOCOL:
        return "the published protocol"
    return "NOT the published protocol: " + ", ".join(f"{key} {value:g}" for key, value in summary["protocol"].items()
                                                       if PROTOCOL.get(key) != value) + " instead"


def _load_effect(summary: dict) -> list:
    """The load term: held-out RMS per joint with and without it, and its coefficients."""
    by = {(m["friction"], m["method"]): m for m in summary["models"]}
    loaded = [name for name, terms in FRICTION_SETS.items() if "load" in terms]
    out = []
    for name in loaded:
        base = "+".join(term for term in FRICTION_SETS[name] if term != "load")
        methods = [method for (friction, method) in by if friction == name and (base, method) in by]
        if not methods:
            continue
        out += [f"### The load term ({name} against {base})\n",
                "Load-dependent friction (`dyn_plugin/identification/friction.py`, term `load`): per joint "
                "s(q̇) times the radial force |a × f|, the bending moment |a × n|, the axial force |a · f| and the "
                "transmitted torque |a · n| of the joint reaction wrench (f, n) of the robot identified in a "
                "first pass (Dhanaraj 1990, eqs. 3.1-3.5 and Table 3.2); 4 coefficients per joint, ≥ 0.\n"]
        rows = []
        for method in methods:
            with_load, without = by[name, method], by[base, method]
            change = np.subtract(with_load["holdout_rms"], without["holdout_rms"])
            rows.append([f"{method}: without", *without["holdout_rms"], without["holdout_rms_total"]])
            rows.append([f"{method}: with load", *with_load["holdout_rms"], with_load["holdout_rms_total"]])
            rows.append([f"{method}: change", *change, with_load["holdout_rms_total"] - without["holdout_rms_total"]])
        joints = summary["joints"]
        out += [*_table(["held-out RMS, N·m", *(f"j{j + 1}" for j in range(len(joints))), "total"], rows), ""]
        for method in methods:
            change = np.subtract(by[name, method]["holdout_rms"], by[base, method]["holdout_rms"])
            out.append(f"- {method}: lower with the load term on joint(s) "
                       f"{_joint_list(np.flatnonzero(change < 0))}, not lower on {_joint_list(np.flatnonzero(change >= 0))}"
                       f"; total {by[base, method]['holdout_rms_total']:.4g} → {by[name, method]['holdout_rms_total']:.4g} N·m.")
            out.append(f"  The loads of the {method} fit: the joint wrenches of {by[name, method]['loads_from']}.")
        out += ["", "Standard errors: of the weighted problem, unconstrained, at the estimate, with the filtered "
                "log's noise correlated over the filter's settling time (`dp.identify` of a prepared log, "
                "`parameter_covariance`); a coefficient held at its bound 0 shows t = 0.  The loads depend on all the "
                "standard parameters of the first pass's robot, the unidentifiable ones included (its completion "
                "nearest the nominal CAD values).\n"]
        out += _coefficients(summary["load_coefficients"], joints)
    return out


def _joint_list(indices) -> str:
    return ", ".join(str(j + 1) for j in indices) or "none"


def _coefficients(coefficients: dict, joints) -> list:
    out = []
    for method, rows in coefficients.items():
        kinds = list(dict.fromkeys(row["kind"] for row in rows))
        cell = {(row["joint"], row["kind"]): row for row in rows}
        table = [[f"j{j + 1}", *(_coefficient_cell(cell.get((joint, kind))) for kind in kinds)]
                 for j, joint in enumerate(joints)]
        significant = [f"{row['kind']} j{joints.index(row['joint']) + 1}" for row in rows
                       if row["t_ratio"] is not None and abs(row["t_ratio"]) >= SIGNIFICANT]
        out += [f"Load coefficients, {method}: value ± standard error (t = value / error); radial and axial in m "
                "(μ r), bending and transmitted dimensionless (2 μ r / d, ≈ 1 − η):\n",
                *_table(["joint", *kinds], table), "",
                f"Significant (|t| ≥ {SIGNIFICANT:g}): {', '.join(significant) or 'none'}; "
                f"{len(rows) - len(significant)} of {len(rows)} are not.\n"]
    return out


def _coefficient_cell(row) -> str:
    if row is None:
        return "–"
    t = "–" if row["t_ratio"] is None else f"{row['t_ratio']:.2g}"
    return f"{row['value']:.3g} ± {row['std_error']:.2g} ({t})"


def _panda_figures(folder: Path, panda: dict) -> list:
    summary, arrays = panda["summary"], panda["arrays"]
    shown = [label for label in (f"{LAW_BASE} (least squares)", f"{LAW_BASE}+load (least squares)")
             if label in arrays["predicted"]]
    paths = [plots.panda_holdout(folder / "panda_holdout.png", arrays, summary["joints"], shown)]
    n = len(summary["joints"])
    series = {"published (Gaz et al. 2019)": [*summary["published"]["per_joint"], summary["published"]["total"]]}
    for entry in summary["models"]:
        if entry["friction"] in BAR_SETS:
            series[_model_label(entry)] = [*entry["holdout_rms"], entry["holdout_rms_total"]]
    for law in summary["laws"]:
        if law["method"] == "least squares" and law["law"] in BAR_LAWS:
            series[f"{law['law']} law (least squares)"] = [*law["holdout_rms"], law["holdout_rms_total"]]
    groups = [f"j{j + 1}" for j in range(n)] + ["total"]
    paths.append(plots.rms_bars(folder / "panda_rms.png", groups, series, "held-out torque RMS (N·m)",
                                "Panda, held-out torque RMS per joint (the others: see the table)"))
    return paths


# -- Franka joint -----------------------------------------------------------------------------

def franka_markdown(summary: dict) -> list:
    """The Franka joint section (markdown lines) of the summary of :func:`.franka_study`."""
    speeds = list(summary["files"])
    laws = summary["laws"]
    rows = [[law, *(laws[law]["rms"][s][s] for s in speeds)] for law in laws]
    rows += [[f"published {name} (from the data's arrays)", *(values.get(s) for s in speeds)]
             for name, values in summary["published"].items()]
    rows += [[f"published {name} (the data README)", *(values.get(s) for s in speeds)]
             for name, values in _by_model(summary["published_readme"], speeds).items()]
    out = ["## One Franka joint (joint 2) at three speeds: friction laws\n",
           "Files: " + ", ".join(f"`{path}` ({summary['samples'][s]} samples)" for s, path in summary["files"].items())
           + ".  Each law of `dp.FRICTION_LAWS` fitted (`dp.fit_friction`, no offset) on one speed and scored on "
             "every speed; the published models are those of the data's authors (NNFM comparative data).\n",
           "RMS of predicted − measured friction, N·m, fitted and scored on the same speed (the published models' "
           f"setting; – : not finite{_diverged(summary['published'])}):\n",
           *_table(["law", *speeds], rows), ""]
    matrix = [[law, fit_speed, *(laws[law]["rms"][fit_speed][s] for s in speeds)] for law in laws for fit_speed in speeds]
    out += _franka_findings(summary, speeds)
    out += ["Fitted on one speed, scored on every speed (RMS, N·m):\n",
            *_table(["law", "fitted on", *(f"scored on {s}" for s in speeds)], matrix), "",
            "![friction against velocity, per law](franka_laws.png)\n", "![RMS per speed](franka_rms.png)\n"]
    return out


def _franka_findings(summary: dict, speeds) -> list:
    """Bullets: per speed the best law against the best published model; per law its RMS on
    the speed it was fitted on against the mean on the other speeds."""
    laws = summary["laws"]
    out = []
    for s in speeds:
        law = min(laws, key=lambda name: laws[name]["rms"][s][s])
        scored = [(rms[s], name) for name, rms in summary["published"].items() if rms.get(s) is not None]
        best = f"; the best published: {min(scored)[1]} {min(scored)[0]:.4g} N·m" if scored else ""
        out.append(f"- {s}: lowest RMS fitted and scored there: {law} {laws[law]['rms'][s][s]:.4g} N·m{best}.")
    for law, entry in laws.items():
        same = np.mean([entry["rms"][s][s] for s in speeds])
        other = [entry["rms"][f][s] for f in speeds for s in speeds if f != s]
        if other:
            out.append(f"- {law}: mean RMS {same:.4g} N·m on the speed it was fitted on, {np.mean(other):.4g} N·m "
                       "on the other speeds.")
    for law, entry in laws.items():
        for fit_speed, fit in entry["fits"].items():
            if fit["undetermined"]:
                out.append(f"- {law} fitted on {fit_speed}: {undetermined_note(fit)}.")
    return out + [""]



def _diverged(published: dict) -> str:
    where = [f"{name} on {speed}" for name, values in published.items() for speed, rms in values.items() if rms is None]
    return f": the published {', '.join(where)} diverges" if where else ""


def _by_model(table: dict, speeds) -> dict:
    names = list(dict.fromkeys(name for s in speeds for name in table.get(s, {})))
    return {name: {s: table.get(s, {}).get(name) for s in speeds} for name in names}


def _franka_figures(folder: Path, franka: dict) -> list:
    summary, arrays = franka["summary"], franka["arrays"]
    laws, speeds = list(summary["laws"]), list(summary["files"])
    paths = [plots.franka_laws(folder / "franka_laws.png", arrays, laws)]
    series = {law: [summary["laws"][law]["rms"][s][s] for s in speeds] for law in laws}
    series.update({f"published {name}": [values.get(s) for s in speeds]
                   for name, values in summary["published"].items()})
    paths.append(plots.rms_bars(folder / "franka_rms.png", speeds, series, "friction RMS (N·m)",
                                "Franka joint 2: laws fitted and scored on each speed (x: not finite)"))
    return paths


# -- markdown ---------------------------------------------------------------------------------

def _table(header, rows) -> list:
    """A markdown table; numbers with 4 significant digits, None as '–'."""
    def cell(value):
        if value is None:
            return "–"
        if isinstance(value, (float, np.floating)):
            return f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines
