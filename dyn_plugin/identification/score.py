"""How well an identified model predicts torques it was not fitted to: :func:`holdout_rms`
(one definition, used by ``dyn-plugin identify --log`` and its report) and
:func:`plot_holdout`.

The total is √(mean over joints of each joint's mean square error), the definition of the
published 0.275 N·m of the Panda model (tests/data/README.md; Gaz et al., IEEE RA-L
4(4), 2019): with equal samples per joint it is the RMS over every joint and sample.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InputError


@dataclasses.dataclass(frozen=True)
class TorqueRMS:
    """per_joint : (n,) N·m (N for a prismatic joint), RMS of measured − predicted torque;
    total : √(mean of per_joint²); samples : how many samples were scored."""

    per_joint: np.ndarray
    total: float
    samples: int

    def to_dict(self, joint_names) -> dict:
        """``{"holdout_rms": {joint name: N·m, in joint order}, "holdout_rms_total": N·m,
        "holdout_samples": count}``."""
        return {"holdout_rms": {name: float(v) for name, v in zip(joint_names, self.per_joint)},
                "holdout_rms_total": self.total, "holdout_samples": self.samples}

    def __str__(self) -> str:
        return (f"held-out torque RMS over {self.samples} samples: total {self.total:.4g}; per joint "
                + " ".join(f"{v:.3g}" for v in self.per_joint))


def torque_rms(measured, predicted) -> TorqueRMS:
    """:class:`TorqueRMS` of two (N, n) torque arrays."""
    measured, predicted = np.asarray(measured, dtype=float), np.asarray(predicted, dtype=float)
    if measured.shape != predicted.shape or measured.ndim != 2 or len(measured) == 0:
        raise InputError(f"measured and predicted torques must be two (N, n) arrays of one shape, got "
                         f"{measured.shape} and {predicted.shape}")
    per_joint = np.sqrt(np.mean((measured - predicted) ** 2, axis=0))
    return TorqueRMS(per_joint, float(np.sqrt(np.mean(per_joint ** 2))), len(measured))


def holdout_rms(result, log) -> TorqueRMS:
    """Torque RMS of an :class:`~dyn_plugin.identification.IdentificationResult` on a
    :class:`~dyn_plugin.identification.log.Log` (e.g. the held-out part of ``log.split()``):
    its low-passed torques against the model's, dry friction along the log's low-passed
    direction of motion (:attr:`~dyn_plugin.identification.log.Log.direction`)."""
    if log.n != result.measured.shape[1]:
        raise InputError(f"the log has {log.n} joints and the identified model {result.measured.shape[1]}")
    return torque_rms(log.tau, result.predict(log.q, log.qd, log.qdd, log.direction))


def plot_holdout(result, log, path, joint_names=None, title=None):
    """Measured and predicted torque on ``log`` against time, one panel per joint, to ``path``
    (an image file; legend above the panels); returns the path."""
    predicted = result.predict(log.q, log.qd, log.qdd, log.direction)
    score = torque_rms(log.tau, predicted)
    title = title or f"{result.model_name}: held-out torques, total RMS {score.total:.3g} N·m"
    return plot_torques(path, log.t, "t (s)", log.tau, predicted, joint_names, title, score.per_joint,
                        measured_label="measured (filtered)")


def plot_torques(path, x, xlabel: str, measured, predicted, joint_names=None, title: str = "", rms=None,
                 measured_label: str = "measured"):
    """Measured and predicted torques (N, n) against ``x`` (N,), one panel per joint
    (τ in N·m, N for a prismatic joint), each panel's RMS beside it when ``rms`` (n,) is
    given, the legend above the panels; written to ``path``, which is returned."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = measured.shape[1]
    names = joint_names if joint_names is not None else [f"joint {j + 1}" for j in range(n)]
    fig, axes = plt.subplots(n, 1, figsize=(8, 1.5 * n + 1.2), sharex=True, squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(x, measured[:, j], "-", lw=1.6, color="0.6", label=measured_label)
        ax.plot(x, predicted[:, j], "-", lw=0.9, color="C3", label="predicted")
        ax.set_ylabel(f"{names[j]}\nτ (N·m; N if\nprismatic)", fontsize="small")
        if rms is not None:
            ax.text(1.01, 0.5, f"RMS\n{rms[j]:.3g}", transform=ax.transAxes, va="center", fontsize="small")
    axes[-1, 0].set_xlabel(xlabel)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncol=2, fontsize="small", frameon=False)
    fig.suptitle(title, x=0.02, ha="left", fontsize="medium")
    fig.tight_layout(rect=(0, 0, 0.94 if rms is not None else 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
