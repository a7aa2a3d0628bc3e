"""Pictures of a schedule study (``dyn-plugin schedule --plot FILE.png``), one question each:

* ``FILE.png``, the Gantt chart of one schedule: processors up, levels across, one box per
  subtask coloured by link, hatched for the backward recursion, cross-hatched for friction;
  as tall as the processors the schedule uses (its widest level), however many it was given;
* ``FILE-speedup.png`` (:func:`speedup_path`), how the schedules scale: the speed-up S_p
  and the efficiency E_p against p, in two panels (thesis Eqs. 4.1-4.2, Figs. 4.11-4.13),
  beside ideal S_p = p and the thesis's Appendix C figures where it has them; written for
  one processor count too (one point per rule), so that ``--processors 6`` still says how
  far from ideal it is.

Legends stand beside the panels, never on the data."""

from __future__ import annotations

from pathlib import Path

from .dag import BACKWARD, FRICTION

HATCH = {BACKWARD: "////", FRICTION: "xxx"}


def speedup_path(path) -> Path:
    """Where the speed-up figure goes beside ``path``: ``gantt.png`` -> ``gantt-speedup.png``."""
    path = Path(path)
    return path.with_name(f"{path.stem}-speedup{path.suffix}")


def plot_study(study, path, schedule=None) -> tuple:
    """Write the study's two figures (module docstring) to ``path`` and
    :func:`speedup_path` of it (any format matplotlib writes); returns both paths.
    ``schedule``: the one in the Gantt chart (default :meth:`.study.ScheduleStudy.shown`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = schedule or study.shown()
    title = (f"{study.robot} ({study.mode}{', friction' if study.friction else ''}): {study.tasks} tasks of "
             f"{study.graph.flops_per_task} flop{'s' if study.graph.flops_per_task > 1 else ''}, critical path "
             f"{study.critical_path} levels")
    width = min(24.0, max(8.0, 0.22 * shown.levels + 3.5))
    fig, ax = plt.subplots(figsize=(width, 2.6 + 0.32 * busy_processors(shown)))
    _gantt(ax, study, shown)
    gantt = _save(plt, fig, title, path)
    fig, (ax_s, ax_e) = plt.subplots(1, 2, figsize=(11.5, 4.4))
    _speedup(ax_s, ax_e, fig, study)
    return gantt, _save(plt, fig, title, speedup_path(path))


def busy_processors(schedule) -> int:
    """The processors a schedule uses: its widest level (at most its processor count)."""
    return max(map(len, schedule.table), default=0)


def _save(plt, fig, title: str, path) -> Path:
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _gantt(ax, study, shown) -> None:
    from matplotlib.patches import Patch, Rectangle

    colours = _link_colours(study.graph)
    busy = busy_processors(shown)
    label = shown.levels <= 60 and busy <= 16
    for level, tasks in enumerate(shown.table, start=1):
        for processor, task in enumerate(tasks, start=1):
            described = study.graph.info.get(task)
            link = described.link if described else 0
            phase = described.phase if described else None
            ax.add_patch(Rectangle((level - 0.5, processor - 0.42), 1.0, 0.84, facecolor=colours.get(link, "0.7"),
                                   edgecolor="0.25", linewidth=0.4, hatch=HATCH.get(phase)))
            if label:
                ax.text(level, processor, str(task), ha="center", va="center", fontsize=5, rotation=90)
    ax.set_xlim(0, shown.levels + 1)          # half a level of margin beyond the first and the last
    ax.set_ylim(0.4, busy + 0.6)
    ax.set_xticks(sorted({1, *range(5, shown.levels + 1, 5), shown.levels}))
    ax.set_xlabel(f"level ({study.graph.flops_per_task} flop{'s' if study.graph.flops_per_task > 1 else ''} each)")
    ax.set_ylabel("processor")
    ax.set_yticks(range(1, busy + 1))
    idle = f" ({busy} busy)" if busy < shown.processors else ""
    ax.set_title(f"{shown.rule} schedule on {shown.processors} processors{idle}: {shown.levels} levels, "
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


def _speedup(ax_s, ax_e, fig, study) -> None:
    """S_p (left) and E_p (right) against p, a line and marker per rule; ideal S_p = p and
    E_p = 100 %; the thesis's Appendix C figures as hollow black triangles; one legend below."""
    counts = sorted({s.processors for s in study.schedules} | set((study.reference or {}).get("levels", {})))
    top = float(max(counts, default=1))        # floats: a count may be beyond any machine integer (1e30)
    ideal = [1.0, top]
    ax_s.plot(ideal, ideal, ":", color="0.4", lw=1.0, label="ideal: S_p = p, E_p = 100 %")
    ax_e.plot(ideal, [100, 100], ":", color="0.4", lw=1.0)
    for k, rule in enumerate(dict.fromkeys(s.rule for s in study.schedules)):
        rows = sorted((s for s in study.schedules if s.rule == rule), key=lambda s: s.processors)
        p = [float(s.processors) for s in rows]
        ax_s.plot(p, [s.speedup for s in rows], "o-", color=f"C{k}", zorder=3, label=f"{rule} schedule")
        ax_e.plot(p, [100 * s.efficiency for s in rows], "o-", color=f"C{k}", zorder=3)
    if study.reference:
        levels = study.reference["levels"]
        p = sorted(levels)
        tasks = study.reference["tasks"]
        thesis = dict(marker="^", ls="none", color="black", markerfacecolor="none", ms=8, zorder=2)
        ax_s.plot(p, [tasks / levels[q] for q in p], label="Dhanaraj, Appendix C", **thesis)
        ax_e.plot(p, [100 * tasks / levels[q] / q for q in p], **thesis)
    ax_s.set_title("speed-up", fontsize=10)
    ax_s.set_ylabel("speed-up S_p = T_1 / T_p (×)")
    ax_e.set_title("efficiency", fontsize=10)
    ax_e.set_ylabel("efficiency E_p = S_p / p (%)")
    ax_e.set_ylim(0, 105)
    ax_s.set_ylim(0, 1.05 * min(top, max(study.tasks, 1)))   # S_p <= T_1: the ideal line leaves beyond p = T_1
    for ax in (ax_s, ax_e):
        ax.set_xlabel("number of processors p")
        if top > 1000:                         # counts over decades
            ax.set_xscale("log")
            ax.set_xlim(0.7, 1.5 * top)
        else:
            ax.set_xlim(0, top + 1)
        ax.grid(alpha=0.3)
    handles, labels = ax_s.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.06))
