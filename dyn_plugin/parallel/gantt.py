"""Pictures of a schedule study (``dyn-plugin schedule --plot``): a Gantt chart (processors
up, levels across, one box per subtask coloured by link, hatched for the backward
recursion, cross-hatched for friction) and, for several processor counts, the speed-up
S_p and efficiency E_p against p (thesis Eqs. 4.1-4.2, Figs. 4.11-4.13), with the
thesis's Appendix C figures where it has them."""

from __future__ import annotations

from pathlib import Path

from .dag import BACKWARD, FRICTION

HATCH = {BACKWARD: "////", FRICTION: "xxx"}


def plot_study(study, path, schedule=None) -> Path:
    """Write the study's pictures to ``path`` (any format matplotlib writes); returns it.
    ``schedule``: the one in the Gantt chart (default :meth:`.study.ScheduleStudy.shown`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = schedule or study.shown()
    counts = sorted({s.processors for s in study.schedules})
    curves = len(counts) > 1
    width = min(24.0, max(8.0, 0.22 * shown.levels + 2.5))
    height = 3.2 + 0.28 * shown.processors
    ratios = [1.0 + 0.1 * shown.processors, 1.2][:2 if curves else 1]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(width, height + (3.6 if curves else 0)), squeeze=False,
                             gridspec_kw={"height_ratios": ratios})
    _gantt(axes[0][0], study, shown)
    if curves:
        _speedup(axes[1][0], study)
    fig.suptitle(f"{study.robot} ({study.mode}{', friction' if study.friction else ''}): {study.tasks} tasks of "
                 f"{study.graph.flops_per_task} flops, critical path {study.critical_path} levels", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _gantt(ax, study, shown) -> None:
    from matplotlib.patches import Patch, Rectangle

    colours = _link_colours(study.graph)
    label = shown.levels <= 60 and shown.processors <= 16
    for level, tasks in enumerate(shown.table, start=1):
        for processor, task in enumerate(tasks, start=1):
            described = study.graph.info.get(task)
            link = described.link if described else 0
            phase = described.phase if described else None
            ax.add_patch(Rectangle((level - 0.5, processor - 0.42), 1.0, 0.84, facecolor=colours.get(link, "0.7"),
                                   edgecolor="0.25", linewidth=0.4, hatch=HATCH.get(phase)))
            if label:
                ax.text(level, processor, str(task), ha="center", va="center", fontsize=5, rotation=90)
    ax.set_xlim(0.5, shown.levels + 0.5)
    ax.set_ylim(0.5, shown.processors + 0.5)
    ax.set_xlabel(f"level ({study.graph.flops_per_task} flop{'s' if study.graph.flops_per_task > 1 else ''} each)")
    ax.set_ylabel("processor")
    ax.set_yticks(range(1, shown.processors + 1))
    ax.set_title(f"{shown.rule} schedule on {shown.processors} processors: {shown.levels} levels, "
                 f"S = {shown.speedup:.2f}, E = {100 * shown.efficiency:.1f} %", fontsize=10)
    handles = [Patch(facecolor=c, edgecolor="0.25", label=f"link {k}") for k, c in colours.items() if k]
    phases = {study.graph.phase(t) for t in study.graph.tasks}
    handles += [Patch(facecolor="white", edgecolor="0.25", hatch=HATCH.get(p), label=p) for p in
                ("forward", BACKWARD, FRICTION) if p in phases]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def _link_colours(graph) -> dict:
    from matplotlib import colormaps

    links = sorted({d.link for d in graph.info.values()})
    cmap = colormaps["tab10" if len(links) <= 10 else "tab20"]
    return {link: cmap(k % cmap.N) for k, link in enumerate(links)}


def _speedup(ax, study) -> None:
    eff = ax.twinx()
    for k, rule in enumerate(dict.fromkeys(s.rule for s in study.schedules)):
        rows = [s for s in study.schedules if s.rule == rule]
        p = [s.processors for s in rows]
        ax.plot(p, [s.speedup for s in rows], "o-", color=f"C{k}", label=f"S_p, {rule}")
        eff.plot(p, [100 * s.efficiency for s in rows], "s--", color=f"C{k}", alpha=0.6, label=f"E_p, {rule}")
    if study.reference:
        levels = study.reference["levels"]
        p = sorted(levels)
        tasks = study.reference["tasks"]
        ax.plot(p, [tasks / levels[q] for q in p], "k^", label="S_p, Dhanaraj App. C")
        eff.plot(p, [100 * tasks / levels[q] / q for q in p], "kv", alpha=0.6, label="E_p, Dhanaraj App. C")
    ax.set_xlabel("processors p")
    ax.set_ylabel("speed-up S_p = T_1 / T_p")
    eff.set_ylabel("efficiency E_p = S_p / p [%]")
    eff.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    lines = ax.get_legend_handles_labels()
    more = eff.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="center right")
