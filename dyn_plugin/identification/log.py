"""From a raw robot log to the states identification needs: :func:`prepare_log` → :class:`Log`.

A robot logs joint positions q, (often) velocities q̇ and measured torques τ at irregular
time stamps.  Identification (:func:`~dyn_plugin.identification.identify`) needs q, q̇, q̈,
τ on the same samples, with the sensor noise above the motion's band removed and q̈, which
no robot logs, differentiated without amplifying that noise.  The standard treatment
(Gautier & Khalil; Gaz, Cognetti, Oliva, Robuffo Giordano, De Luca, "Dynamic
Identification of the Franka Emika Panda Robot With Retrieval of Feasible Parameters Using
Penalty-Based Optimization", IEEE RA-L 4(4), 2019; tests/data/README.md gives their
protocol), done here in this order:

1. resample q, q̇, τ linearly onto a uniform grid (the median sample rate to 9 significant
   digits, or an integer multiple of the requested output rate near it);
2. zero-phase low-pass: a 4th-order Butterworth run forward and backward
   (``scipy.signal.sosfiltfilt``): no phase lag, amplitude gain |H|² = 1/(1 + (f/f_c)⁸)
   for the analogue prototype, 1/(1 + (tan(πf/f_s)/tan(πf_c/f_s))⁸) exactly for the
   digital filter at sample rate f_s (bilinear transform prewarped at f_c, as
   ``scipy.signal.butter`` designs it; Oppenheim & Schafer, *Discrete-Time Signal
   Processing*, 3rd ed., §7.2);
3. q̇ = the filtered logged q̇, or the derivative of the filtered q when the log has none;
   q̈ = the derivative of the filtered q̇ (central differences on the grid, ``np.gradient``:
   relative error (ωh)²/6 at angular frequency ω, step h);
4. trim the filter's edge transients at both ends;
5. decimate to the output rate (after filtering, so nothing aliases).

Beside the states, the :class:`Log` keeps ``direction``, sgn(q̇) of the filtered q̇ put
through the same low-pass: the direction of motion as the filtered torque saw it.  Dry
friction F sgn(q̇) is a step at every reversal, and the low-pass spreads that step in τ
over ~1/f_c; a model that uses the sharp sgn(q̇) against the filtered τ misfits every
reversal, which biases F down and the viscous coefficient up (12 % on a simulated UR5 at
f_c = 6.5 Hz, and a held-out RMS 30× the noise-free floor).  Filtering the model's columns
with the torque's filter ("parallel filtering": M. Gautier, P. Poignet, "Extended Kalman
filtering and weighted least squares dynamic identification of robot", Control Engineering
Practice 9(12), 2001) removes it: the filter is linear, so filter(F sgn(q̇)) =
F filter(sgn(q̇)).  :func:`~dyn_plugin.identification.identify` uses it for the dry and
load-dependent friction columns when given a :class:`Log`.

The default cutoff comes from the data (:func:`motion_band`): ten times the frequency under
which 99 % of the power of q̇ lies, clipped to [1 Hz, a fifth of the output Nyquist
frequency].  The default trim is seven time constants of the filter's slowest pole
(:func:`settling_time`).  Every choice is recorded in the :class:`Log`.

Reading a log from a file is :func:`~dyn_plugin.identification.logfile.load_log`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from ..arrays import real_number
from ..errors import InputError

ORDER = 4
"""Butterworth order (the published protocol's)."""
BAND_FRACTION = 0.99
"""The motion's band: the frequency under which this fraction of the power of q̇ lies."""
CUTOFF_PER_BAND = 10.0
"""Default cutoff = this multiple of the motion's band: a decade above it, where the filter
passes the motion with a gain 1 − 1e-8 (1/(1 + 0.1⁸)), and q̈ (power weighted by f²) too."""
MIN_CUTOFF_HZ = 1.0
"""The default cutoff is at least this (a slower one would need seconds of trim) ..."""
CUTOFF_NYQUIST_FRACTION = 0.2
"""... and at most this fraction of the output's Nyquist frequency (the upper end wins)."""
SETTLING_TIME_CONSTANTS = 7.0
"""Default trim: this many time constants of the slowest pole (its transient then is
e⁻⁷ < 1e-3 of the jump that excited it)."""
MIN_SAMPLES = 3


@dataclasses.dataclass(frozen=True)
class Log:
    """A prepared log: uniform samples of the states identification needs, and how they were made.

    t : (N,) s, uniform at ``rate``; q (N, n) rad (m for a prismatic joint), qd (N, n)
    rad/s, qdd (N, n) rad/s², tau (N, n) N·m (N).
    cutoff : Hz, the low-pass cutoff; cutoff_from : "given" or "spectrum" (then ``band`` Hz is
    the motion's band it came from, :func:`motion_band`); rate : Hz, of ``t``; grid_rate : Hz,
    of the uniform grid filtered before decimation; trim : s, dropped at each end;
    qd_from : "logged" or "differentiated"; source : where the samples came from;
    direction : (N, n), about [−1, 1], sgn(q̇) low-passed like τ (see the module).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    cutoff: float
    cutoff_from: str
    band: Optional[float]
    rate: float
    grid_rate: float
    trim: float
    qd_from: str
    source: str = "arrays"
    direction: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.t)

    @property
    def n(self) -> int:
        """Number of joints (columns)."""
        return self.q.shape[1]

    def split(self, holdout: float = 0.4) -> tuple:
        """``(fit, held_out)``: the first 1 − ``holdout`` of the samples (by time) and the rest,
        each a :class:`Log` (scoring on a later stretch of the motion than the fit saw)."""
        if not (real_number(holdout) and 0 < holdout < 1):
            raise InputError(f"holdout must be a fraction strictly between 0 and 1, got {holdout!r}")
        cut = int(round(len(self) * (1 - holdout)))
        if cut < 1 or cut >= len(self):
            raise InputError(f"a holdout of {holdout:g} of {len(self)} samples leaves one part empty; "
                             "record a longer log or choose a holdout nearer 0.5")
        return self._rows(slice(0, cut)), self._rows(slice(cut, None))

    def _rows(self, rows: slice) -> "Log":
        arrays = {name: getattr(self, name)[rows] for name in ("t", "q", "qd", "qdd", "tau", "direction")
                  if getattr(self, name) is not None}
        return dataclasses.replace(self, **arrays)

    def to_dict(self) -> dict:
        """How the log was prepared (JSON-ready; no arrays)."""
        return {"source": self.source, "samples": len(self), "start_s": float(self.t[0]),
                "duration_s": float(self.t[-1] - self.t[0]), "cutoff_hz": self.cutoff,
                "cutoff_from": self.cutoff_from, "motion_band_hz": self.band, "rate_hz": self.rate,
                "grid_rate_hz": self.grid_rate, "trim_s": self.trim, "qd_from": self.qd_from}

    def describe(self) -> str:
        """One line: what was done to the raw samples."""
        cutoff = (f"cutoff {self.cutoff:.3g} Hz" + (f" (from the data: {100 * BAND_FRACTION:g} % of q̇'s power "
                                                     f"under {self.band:.3g} Hz, x{CUTOFF_PER_BAND:g})"
                                                     if self.cutoff_from == "spectrum" else " (given)"))
        return (f"{self.source}: {len(self)} samples at {self.rate:.4g} Hz over {self.t[-1] - self.t[0]:.4g} s; "
                f"resampled at {self.grid_rate:.4g} Hz, zero-phase Butterworth order {ORDER}, {cutoff}, "
                f"{self.trim:.3g} s trimmed at each end, q̇ {self.qd_from}")


def prepare_log(t, q, tau, qd=None, cutoff: Optional[float] = None, rate: Optional[float] = None,
                trim: Optional[float] = None, source: str = "arrays") -> Log:
    """Turn raw logged samples into a :class:`Log` (see the module for the steps).

    t : (N,) s, strictly increasing, any spacing; q, tau : (N, n); qd : (N, n) or None
    (then differentiated from the filtered q).
    cutoff : Hz, below the output's Nyquist frequency; None: from the data (:func:`default_cutoff`).
    rate : Hz, the output sample rate (decimation after filtering); None: the median rate of t.
    trim : s dropped at each end; None: :func:`settling_time` of the cutoff.
    source : a name for the log in reports (a file path).
    Raises InputError for arrays of other lengths, non-finite samples (naming the array,
    sample and column), stamps that do not increase, a cutoff at or above the Nyquist
    frequency, a trim that leaves fewer than 3 samples.
    """
    t, q, tau, qd = _checked(t, q, tau, qd)
    median_rate = float(f"{1.0 / float(np.median(np.diff(t))):.9g}")   # stamps' differences carry rounding
    step, grid_rate = _grid(median_rate, rate)
    out_rate = grid_rate / step
    grid = t[0] + np.arange(int(math.floor((t[-1] - t[0]) * grid_rate * (1 + 1e-12))) + 1) / grid_rate
    q_grid, tau_grid = _resampled(grid, t, q), _resampled(grid, t, tau)
    qd_grid = None if qd is None else _resampled(grid, t, qd)
    band = None
    if cutoff is None:
        band = motion_band(q_grid if qd_grid is None else qd_grid, grid_rate, differentiate=qd_grid is None,
                           ceiling=CUTOFF_NYQUIST_FRACTION * out_rate / 2)
        cutoff = default_cutoff(band, out_rate)
    else:
        _check_cutoff(cutoff, out_rate, grid_rate, rate)
    trim = settling_time(cutoff) if trim is None else _checked_trim(trim)
    low_pass = _low_pass(cutoff, grid_rate)
    q_f, tau_f = low_pass(q_grid, "q"), low_pass(tau_grid, "tau")
    qd_f = np.gradient(q_f, 1.0 / grid_rate, axis=0) if qd_grid is None else low_pass(qd_grid, "qd")
    qdd_f = np.gradient(qd_f, 1.0 / grid_rate, axis=0)
    direction = low_pass(np.sign(qd_f), "qd")
    skip = int(math.ceil(trim * grid_rate - 1e-9))
    rows = slice(skip, len(grid) - skip, step)
    if len(grid[rows]) < MIN_SAMPLES:
        raise InputError(f"trimming {trim:.3g} s at each end of a {t[-1] - t[0]:.3g} s log leaves "
                         f"{len(grid[rows])} samples; give a shorter trim or a longer log")
    return Log(grid[rows], q_f[rows], qd_f[rows], qdd_f[rows], tau_f[rows], float(cutoff),
               "spectrum" if band is not None else "given", band, out_rate, grid_rate, float(trim),
               "differentiated" if qd is None else "logged", str(source), direction[rows])


def motion_band(x, rate: float, differentiate: bool = False, ceiling: Optional[float] = None) -> float:
    """Hz: the frequency under which :data:`BAND_FRACTION` of the power of q̇ lies.

    x : (N, n) q̇ on a uniform grid at ``rate`` Hz, or q with ``differentiate`` (then
    q̇ = its central difference).  q̇ is first low-passed at ``ceiling`` Hz (default a
    fifth of the Nyquist frequency): differentiated sensor noise is blue (power ∝ f²), and
    over a whole 1 kHz band it can outweigh the motion's last percent; a cutoff above the
    ceiling is never chosen anyway.  Then its mean is removed and a Hann window (less
    leakage from the log's unequal ends) applied; the power is summed over the joints.
    """
    x = np.asarray(x, dtype=float)
    velocity = np.gradient(x, 1.0 / rate, axis=0) if differentiate else x
    nyquist = rate / 2
    ceiling = CUTOFF_NYQUIST_FRACTION * nyquist if ceiling is None else min(ceiling, 0.9 * nyquist)
    velocity = _low_pass(ceiling, rate)(velocity, "qd")
    velocity = (velocity - velocity.mean(axis=0)) * np.hanning(len(velocity))[:, None]
    power = (np.abs(np.fft.rfft(velocity, axis=0)) ** 2).sum(axis=1)
    frequencies = np.fft.rfftfreq(len(velocity), 1.0 / rate)
    total = power.sum()
    if not total > 0:
        raise InputError("the log does not move: q̇ is constant, so there is no motion to pick a cutoff from; "
                         "give a cutoff (Hz)")
    return float(frequencies[np.searchsorted(np.cumsum(power) / total, BAND_FRACTION)])


def default_cutoff(band: float, rate: float) -> float:
    """Hz: :data:`CUTOFF_PER_BAND` × ``band``, clipped to [1 Hz, :data:`CUTOFF_NYQUIST_FRACTION`
    × the Nyquist frequency of the output ``rate`` Hz] (the upper end wins if they cross)."""
    return float(min(max(CUTOFF_PER_BAND * band, MIN_CUTOFF_HZ), CUTOFF_NYQUIST_FRACTION * rate / 2))


def settling_time(cutoff: float, order: int = ORDER) -> float:
    """s: :data:`SETTLING_TIME_CONSTANTS` time constants of the slowest pole of a Butterworth
    low-pass of ``order`` and ``cutoff`` Hz.  Its poles lie on the circle of radius
    ω_c = 2π f_c at angles π/2 + (2k + 1)π/(2·order) (Oppenheim & Schafer §7.2); the one
    nearest the imaginary axis has real part −ω_c sin(π/(2·order)), time constant
    1/(ω_c sin(π/(2·order))): 0.416/f_c for order 4 (7 of them: 2.91/f_c, 0.29 s at 10 Hz)."""
    return SETTLING_TIME_CONSTANTS / (2 * math.pi * cutoff * math.sin(math.pi / (2 * order)))


def _low_pass(cutoff: float, rate: float):
    from scipy.signal import butter, sosfiltfilt

    sos = butter(ORDER, cutoff, fs=rate, output="sos")

    def apply(x: np.ndarray, name: str) -> np.ndarray:
        try:
            return sosfiltfilt(sos, x, axis=0)
        except ValueError as exc:             # shorter than the filter's padding
            raise InputError(f"{name}: {len(x)} samples are too few to filter ({exc})") from None
    return apply


def _grid(median_rate: float, rate: Optional[float]) -> tuple:
    """(decimation step, grid rate Hz): the grid is the median rate, or the integer multiple of
    ``rate`` nearest it (so that decimating by the step gives ``rate`` exactly)."""
    if rate is None:
        return 1, median_rate
    if not (real_number(rate) and math.isfinite(rate) and rate > 0):
        raise InputError(f"rate must be a positive sample rate (Hz), got {rate!r}")
    step = max(1, int(round(median_rate / rate)))
    return step, step * float(rate)


def _check_cutoff(cutoff, out_rate: float, grid_rate: float, rate) -> None:
    if not (real_number(cutoff) and math.isfinite(cutoff) and cutoff > 0):
        raise InputError(f"cutoff must be a positive frequency (Hz), got {cutoff!r}")
    nyquist = out_rate / 2
    if cutoff >= nyquist:
        what = f"the output rate {out_rate:.4g} Hz" if rate is not None else f"the log's median rate {grid_rate:.4g} Hz"
        raise InputError(f"cutoff {cutoff:g} Hz is at or above the Nyquist frequency {nyquist:.4g} Hz of {what}: "
                         f"give a cutoff below {nyquist:.4g} Hz" + (" or a higher rate" if rate is not None else ""))


def _checked_trim(trim) -> float:
    if not (real_number(trim) and math.isfinite(trim) and trim >= 0):
        raise InputError(f"trim must be a duration ≥ 0 (s), got {trim!r}")
    return float(trim)


def _resampled(grid: np.ndarray, t: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.stack([np.interp(grid, t, x[:, j]) for j in range(x.shape[1])], axis=1)


def _checked(t, q, tau, qd) -> tuple:
    """t (N,), q, tau, qd (N, n) as float arrays, or the InputError naming what is wrong."""
    t = _real("t", t, 1)
    arrays = {"q": _real("q", q, 2), "tau": _real("tau", tau, 2)}
    if qd is not None:
        arrays["qd"] = _real("qd", qd, 2)
    lengths = {"t": len(t), **{name: len(a) for name, a in arrays.items()}}
    if len(set(lengths.values())) > 1:
        raise InputError("the arrays disagree in length: " + ", ".join(f"{k} has {v}" for k, v in lengths.items())
                         + " samples; every array needs one row per time stamp")
    n = arrays["q"].shape[1]
    for name, a in arrays.items():
        if a.shape[1] != n:
            raise InputError(f"{name} has {a.shape[1]} columns and q has {n}: one column per joint in each")
    if len(t) < 2 * MIN_SAMPLES:
        raise InputError(f"a log of {len(t)} samples is too short: record at least {2 * MIN_SAMPLES}")
    for name, a in (("t", t[:, None]), *arrays.items()):
        bad = ~np.isfinite(a)
        if bad.any():
            i, j = (int(k[0]) for k in np.nonzero(bad))
            where = f"sample {i}" + (f", column {j} (0-based)" if name != "t" else "")
            raise InputError(f"{name} has a non-finite value ({a[i, j]}) at {where}: remove or repair that sample")
    steps = np.diff(t)
    if not (steps > 0).all():
        i = int(np.flatnonzero(~(steps > 0))[0]) + 1
        raise InputError(f"time stamps must increase: t[{i}] = {float(t[i])!r} s is not after t[{i - 1}] = "
                         f"{float(t[i - 1])!r} s")
    return t, arrays["q"], arrays["tau"], arrays.get("qd")


def _real(name: str, value, ndim: int) -> np.ndarray:
    try:
        array = np.asarray(value)
        if array.dtype.kind not in "fiu":
            raise TypeError(f"dtype {array.dtype}")
        array = array.astype(float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be real numbers (float or int), got {type(value).__name__} ({exc})") from None
    if array.ndim != ndim or 0 in array.shape:
        shape = "(N,)" if ndim == 1 else "(N, n)"
        raise InputError(f"{name} must have shape {shape} (one row per time stamp), got {array.shape}")
    return array
