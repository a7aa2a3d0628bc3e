"""From a raw log to identification: dyn_plugin.identification.log / logfile / score and
``dyn-plugin identify --log``.

The pipeline is held to closed forms: a sum of sinusoids through it comes out with each
tone scaled by the digital Butterworth's forward-backward gain
|H(f)|² = 1/(1 + (tan(πf/f_s)/tan(πf_c/f_s))⁸) (Oppenheim & Schafer, Discrete-Time Signal
Processing, 3rd ed., §7.2: the bilinear transform prewarped at f_c, as scipy's butter) and
no phase shift, and q̈ is the central difference of q̇, which turns A cos(ωt) into
−A (sin(ωh)/h) sin(ωt) exactly.  What remains is the filter's start-up transient, which a
trim of k time constants of the slowest pole reduces to e^-k of the initial mismatch (at
most the signal's size, times ω_c per derivative): that is the tolerance.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.errors import InputError
from dyn_plugin.identification.log import settling_time

FS, T, FC = 1000.0, 8.0, 5.0
# (column, amplitude, frequency Hz): every tone has a whole number of half periods in T, so
# sosfiltfilt's odd extension at both ends continues each tone exactly
TONES = ((0, 1.0, 0.5), (0, 0.2, 7.5), (1, 0.5, 1.25))


def gain(f, fc=FC, fs=FS):
    """|H(f)|² of the forward-backward 4th-order digital Butterworth."""
    return 1.0 / (1.0 + (math.tan(math.pi * f / fs) / math.tan(math.pi * fc / fs)) ** 8)


def tones(t, derivative=0, filtered=False, differences=0, fs=FS):
    """Σ A ω^d sin(ωt + dπ/2) per column; ``filtered``: each tone times gain(f);
    ``differences``: times (sin(ωh)/(ωh)) per central difference taken instead of d/dt."""
    x, h = np.zeros((len(t), 2)), 1 / fs
    for column, amplitude, f in TONES:
        w = 2 * math.pi * f
        a = amplitude * w ** derivative * (gain(f, fs=fs) if filtered else 1.0) * (math.sin(w * h) / (w * h)) ** differences
        x[:, column] += a * np.sin(w * t + derivative * math.pi / 2)
    return x


def transient_bound(k_constants, derivative):
    """e^-k × (Σ|A|) × ω_c^d: the start-up transient after k time constants of the slowest pole."""
    return math.exp(-k_constants) * sum(a for _, a, _ in TONES) * (2 * math.pi * FC) ** derivative


@pytest.mark.parametrize("logged_qd", [True, False])
def test_sinusoids_keep_amplitude_and_phase_below_cutoff(logged_qd):
    t = np.arange(int(T * FS) + 1) / FS
    k = 12
    log = dp.prepare_log(t, tones(t), tones(t), qd=tones(t, 1) if logged_qd else None, cutoff=FC,
                         trim=k / 7 * settling_time(FC))
    assert log.qd_from == ("logged" if logged_qd else "differentiated") and log.cutoff_from == "given"
    assert np.abs(log.q - tones(log.t, 0, True)).max() <= transient_bound(k, 0)
    assert np.abs(log.tau - tones(log.t, 0, True)).max() <= transient_bound(k, 0)
    # q̇: the filtered logged q̇, or the central difference of the filtered q; q̈ one difference more
    d = 0 if logged_qd else 1
    assert np.abs(log.qd - tones(log.t, 1, True, d)).max() <= transient_bound(k, 1)
    assert np.abs(log.qdd - tones(log.t, 2, True, d + 1)).max() <= transient_bound(k, 2)
    # and the analytic derivatives of the filtered signal, each central difference adding (ωh)²/6 relative
    slack = sum(a * gain(f) * (2 * math.pi * f) ** 2 * (2 * math.pi * f / FS) ** 2 / 6 * (d + 1) for _, a, f in TONES)
    assert np.abs(log.qdd - tones(log.t, 2, True)).max() <= transient_bound(k, 2) + 1.01 * slack
    # q̇ and q̈ follow the logged q̇ (here twice the derivative of q), not q
    if logged_qd:
        doubled = dp.prepare_log(t, tones(t), tones(t), qd=2 * tones(t, 1), cutoff=FC, trim=log.trim)
        assert np.abs(doubled.qd - 2 * tones(log.t, 1, True)).max() <= 2 * transient_bound(k, 1)
        assert np.abs(doubled.qdd - 2 * tones(log.t, 2, True, 1)).max() <= 2 * transient_bound(k, 2)
    # the 7.5 Hz tone is attenuated by the closed form (1/26.6): leaving it out is far outside the bound
    assert np.abs(log.q - tones(log.t, 0, False)).max() > 100 * transient_bound(k, 0)


def test_default_trim_leaves_a_transient_below_e_to_the_minus_7():
    t = np.arange(int(T * FS) + 1) / FS
    log = dp.prepare_log(t, tones(t), tones(t), qd=tones(t, 1), cutoff=FC)
    assert log.trim == pytest.approx(7 / (2 * math.pi * FC * math.sin(math.pi / 8)), rel=1e-15)
    assert log.t[0] >= log.trim and log.t[-1] <= T - log.trim
    assert np.abs(log.q - tones(log.t, 0, True)).max() <= transient_bound(7, 0)
    assert np.abs(log.qdd - tones(log.t, 2, True, 1)).max() <= transient_bound(7, 2)


def test_irregular_stamps_within_the_linear_interpolation_bound():
    rng = np.random.default_rng(3)
    h = 1 / FS
    t = np.arange(int(T * FS) + 1) * h + rng.uniform(-0.4, 0.4, int(T * FS) + 1) * h
    t[0], t[-1] = 0.0, T
    log = dp.prepare_log(t, tones(t), tones(t), qd=tones(t, 1), cutoff=FC, trim=12 / 7 * settling_time(FC))
    assert log.grid_rate == pytest.approx(FS, rel=1e-2)   # the median of the jittered steps
    # |f - linear interpolant| <= h_max²/8 max|f''| between stamps; the filter's impulse response
    # (forward-backward, overshooting) has an L1 norm a little above 1: computed, not assumed
    from scipy.signal import butter, sosfiltfilt

    impulse = np.zeros(4001)
    impulse[2000] = 1.0
    l1 = np.abs(sosfiltfilt(butter(4, FC, fs=log.grid_rate, output="sos"), impulse)).sum()
    h_max = np.diff(t).max()
    for x, d in ((log.q, 0), (log.qd, 1)):
        bound = l1 * h_max ** 2 / 8 * sum(a * (2 * math.pi * f) ** (2 + d) for _, a, f in TONES)
        expected = tones(log.t, d, True, fs=log.grid_rate)      # the filter runs at the grid's rate
        assert np.abs(x - expected).max() <= bound + transient_bound(12, d)


def test_decimation_after_filtering_takes_every_kth_sample():
    t = np.arange(int(T * 1024) + 1) / 1024          # a binary rate: the median step is exact
    fine = dp.prepare_log(t, tones(t), tones(t), cutoff=FC, trim=0.5)
    coarse = dp.prepare_log(t, tones(t), tones(t), cutoff=FC, trim=0.5, rate=128)
    assert fine.grid_rate == coarse.grid_rate == 1024 and coarse.rate == 128
    assert np.array_equal(np.diff(coarse.t), np.full(len(coarse) - 1, 1 / 128))
    for name in ("t", "q", "qd", "qdd", "tau"):
        assert np.array_equal(getattr(coarse, name), getattr(fine, name)[::8]), name


def test_default_cutoff_is_a_decade_above_the_motion_band():
    t = np.arange(int(T * FS) + 1) / FS
    one_tone = np.sin(2 * math.pi * 0.5 * t)[:, None] * np.ones((1, 2))
    log = dp.prepare_log(t, one_tone, one_tone)
    # 99 % of the power of a single tone lies within the Hann window's main lobe (±2 bins of 1/T)
    assert log.cutoff_from == "spectrum" and 0.5 <= log.band <= 0.5 + 2 / T
    assert log.cutoff == pytest.approx(10 * log.band, rel=1e-15)
    assert log.trim == pytest.approx(settling_time(log.cutoff), rel=1e-15)
    # sensor noise on q (1e-4 rad, white) is blue once differentiated: the band must not follow it
    noisy = one_tone + 1e-4 * np.random.default_rng(0).standard_normal(one_tone.shape)
    assert dp.prepare_log(t, noisy, noisy).band == log.band
    # clipped: at least 1 Hz, at most a fifth of the output Nyquist frequency
    minute = np.arange(6001) / 100.0
    slow = np.sin(2 * math.pi * minute / 60)[:, None] * np.ones((1, 2))
    assert dp.prepare_log(minute, slow, slow).cutoff == 1.0
    assert dp.prepare_log(t, one_tone, one_tone, rate=20).cutoff == pytest.approx(0.2 * 10, rel=1e-15)


def test_split_by_time():
    t = np.arange(1001) / FS
    log = dp.prepare_log(t, tones(t), tones(t), cutoff=FC, trim=0.1)
    fit, held = log.split(0.4)
    assert len(fit) + len(held) == len(log) and len(held) == round(0.4 * len(log))
    assert fit.t[-1] < held.t[0] and np.array_equal(np.concatenate([fit.q, held.q]), log.q)
    assert fit.cutoff == held.cutoff == log.cutoff
    for bad in (0, 1, -0.1, 1.5, "0.4"):
        with pytest.raises(InputError, match="holdout"):
            log.split(bad)


def test_holdout_rms_definition():
    measured = np.array([[1.0, 0.0], [3.0, 0.0], [1.0, 2.0]])
    predicted = np.zeros((3, 2))
    score = dp.identification.torque_rms(measured, predicted)
    assert score.per_joint == pytest.approx([math.sqrt(11 / 3), math.sqrt(4 / 3)], rel=1e-15)
    assert score.total == pytest.approx(math.sqrt((11 / 3 + 4 / 3) / 2), rel=1e-15)


# -- bad input: each one InputError naming what is wrong

def _arrays(n=200):
    t = np.arange(n) / 100.0
    q = np.sin(np.outer(t, [1.0, 2.0]))
    return t, q, q.copy()


@pytest.mark.parametrize("change, match", [
    (lambda t, q, tau: (t[:-1], q, tau), r"disagree in length: t has 199, q has 200, tau has 200"),
    (lambda t, q, tau: (t, q, tau[:, :1]), "tau has 1 columns and q has 2"),
    (lambda t, q, tau: (t, np.where(np.arange(200)[:, None] == 17, np.nan, q), tau),
     r"q has a non-finite value \(nan\) at sample 17, column 0"),
    (lambda t, q, tau: (t, q, np.where((np.arange(200)[:, None] == 5) & (np.arange(2) == 1), np.inf, tau)),
     r"tau has a non-finite value \(inf\) at sample 5, column 1"),
    (lambda t, q, tau: (np.where(np.arange(200) == 9, np.nan, t), q, tau), r"t has a non-finite value \(nan\) at sample 9"),
    (lambda t, q, tau: (np.where(np.arange(200) == 50, t[49], t), q, tau), r"time stamps must increase: t\[50\]"),
    (lambda t, q, tau: (t[::-1], q, tau), r"time stamps must increase: t\[1\]"),
    (lambda t, q, tau: (t, q.astype(complex), tau), "q must be real numbers"),
    (lambda t, q, tau: (t, q[:, 0], tau), r"q must have shape \(N, n\)"),
])
def test_bad_arrays(change, match):
    with pytest.raises(InputError, match=match):
        dp.prepare_log(*change(*_arrays()), cutoff=5)


def test_bad_qd_and_settings():
    t, q, tau = _arrays()
    with pytest.raises(InputError, match="qd has 199"):
        dp.prepare_log(t, q, tau, qd=q[1:], cutoff=5)
    with pytest.raises(InputError, match=r"cutoff 50 Hz is at or above the Nyquist frequency 50 Hz"):
        dp.prepare_log(t, q, tau, cutoff=50)
    with pytest.raises(InputError, match=r"cutoff 6 Hz is at or above the Nyquist frequency 5 Hz of the output "
                                         r"rate 10 Hz.*or a higher rate"):
        dp.prepare_log(t, q, tau, cutoff=6, rate=10)
    for key, value in (("cutoff", -1.0), ("cutoff", float("nan")), ("rate", 0), ("trim", -0.1)):
        with pytest.raises(InputError, match=key):
            dp.prepare_log(t, q, tau, **{"cutoff": 5, key: value})
    with pytest.raises(InputError, match=r"trimming 1 s at each end of a 1.99 s log leaves 0 samples"):
        dp.prepare_log(t, q, tau, cutoff=5, trim=1.0)
    with pytest.raises(InputError, match="too short"):
        dp.prepare_log(t[:4], q[:4], tau[:4], cutoff=5)
    with pytest.raises(InputError, match="does not move"):
        dp.prepare_log(t, np.ones_like(q), tau)


# -- files

def test_load_log_npz_and_csv_give_the_same_arrays(tmp_path):
    t, q, tau = _arrays(50)
    qd = 2 * q
    np.savez(tmp_path / "run.npz", t=t, q=q, qd=qd, tau=tau)
    from_npz = dp.load_log(tmp_path / "run.npz")
    header = ["t"] + [f"tau{j}" for j in (1, 2)] + [f"q{j}" for j in (1, 2)] + ["note"] + [f"qd{j}" for j in (1, 2)]
    rows = [",".join(header), "# a comment line"]
    rows += [",".join(repr(float(v)) for v in (t[i], *tau[i], *q[i])) + ",x," + ",".join(repr(float(v)) for v in qd[i])
             for i in range(len(t))]
    (tmp_path / "run.csv").write_text("\n".join(rows) + "\n")
    from_csv = dp.load_log(tmp_path / "run.csv")
    for loaded in (from_npz, from_csv):
        for name, expected in (("t", t), ("q", q), ("qd", qd), ("tau", tau)):
            assert np.array_equal(loaded[name], expected), name
    assert from_csv["source"] == str(tmp_path / "run.csv")
    np.savez(tmp_path / "noqd.npz", t=t, q=q, tau=tau)
    assert dp.load_log(tmp_path / "noqd.npz")["qd"] is None
    log = dp.prepare_log(**dp.load_log(tmp_path / "run.npz"), cutoff=5, trim=0.05)
    assert log.source == str(tmp_path / "run.npz") and log.qd_from == "logged"


def _bad_files(tmp_path):
    good = (tmp_path / "good.npz")
    t, q, tau = _arrays(50)
    np.savez(good, t=t, q=q, tau=tau)
    data = good.read_bytes()
    (tmp_path / "text.npz").write_text("t,q1,tau1\n0,1,2\n")
    np.save(tmp_path / "single.npy", q)
    (tmp_path / "single.npz").write_bytes((tmp_path / "single.npy").read_bytes())
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    (tmp_path / "cut_end.npz").write_bytes(data[:-30])
    (tmp_path / "empty.npz").write_bytes(b"")
    np.savez(tmp_path / "notau.npz", t=t, q=q)
    np.savez(tmp_path / "objects.npz", t=t, q=np.array([None] * 50, dtype=object), tau=tau)
    (tmp_path / "missing.csv").write_text("t,q1,q2,tau1\n0,1,2,3\n")
    (tmp_path / "gap.csv").write_text("t,q1,q3,tau1,tau2,tau3\n0,1,2,3,4,5\n")
    (tmp_path / "word.csv").write_text("t,q1,tau1\n0,1,2\n0.1,one,2\n")
    (tmp_path / "short.csv").write_text("t,q1,tau1\n0,1\n")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00t,q1\n")
    (tmp_path / "headonly.csv").write_text("t,q1,tau1\n")
    (tmp_path / "log.txt").write_text("t,q1,tau1\n")
    return [
        ("text.npz", "is not an .npz archive"), ("single.npy", "not .npy"), ("single.npz", r"single numpy array \(.npy\)"),
        ("cut.npz", "damaged or truncated"), ("cut_end.npz", "damaged or truncated"), ("empty.npz", "it is empty"),
        ("notau.npz", r"missing array\(s\) tau \(needs t, q, tau; optional qd\)"),
        ("objects.npz", "holds pickled Python objects"), ("nothere.npz", "no such file"),
        ("missing.csv", r"no column tau2 \(q has columns q1..q2\)"), ("gap.csv", "no column q2"),
        ("word.csv", "line 3, column q1: 'one' is not a number"), ("short.csv", "line 2 has 2 cells, the header 3"),
        ("binary.csv", "not a CSV text file"), ("headonly.csv", "no samples"), ("log.txt", "not .txt"),
    ]


def test_bad_files_are_one_input_error_naming_the_file(tmp_path):
    for name, match in _bad_files(tmp_path):
        with pytest.raises(InputError, match=match) as caught:
            dp.load_log(tmp_path / name)
        assert name in str(caught.value)


# -- the Panda log (tests/data/README.md): the 3-line script and dyn-plugin identify --log

SLICE = Path(__file__).resolve().parent / "data" / "panda_gaz2019_every5.npz"
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]


@pytest.fixture(scope="module")
def panda_urdf():
    from dyn_plugin.tools.zoo_files import discover

    found = [e.path for e in discover()[0] if e.label == "example-robot-data/panda_description/panda.urdf"]
    if not found:
        pytest.skip("example-robot-data's Panda is not installed (pip install 'dyn_plugin[test]')")
    return found[0]


def test_three_line_script_on_the_panda_log(panda_urdf, tmp_path):
    model = dp.load_robot(panda_urdf, lock=FINGERS)
    fit, held = dp.prepare_log(**dp.load_log(SLICE), rate=50).split(0.4)
    result = dp.identify(model, fit)
    score = dp.holdout_rms(result, held)
    # measured 0.092 N·m (default cutoff 4.3 Hz); viscous friction only gives 0.19, a 30 Hz cutoff 0.50
    assert score.total <= 0.12 and score.per_joint.shape == (7,)
    assert fit.cutoff_from == "spectrum" and fit.cutoff == pytest.approx(10 * fit.band, rel=1e-15)
    path = dp.identification.plot_holdout(result, held, tmp_path / "held.png", model.joint_names)
    assert path.stat().st_size > 20_000


def test_cli_identify_log_published_protocol(panda_urdf, capsys):
    import json

    from dyn_plugin.tools.cli import main

    code = main(["identify", panda_urdf, *(f"--lock={j}" for j in FINGERS), "--log", str(SLICE), "--cutoff", "10",
                 "--rate", "100", "--trim", "0.5", "--json", "-"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    # measured 0.139 N·m on this slice (0.131 on the full log; the published model: 0.275)
    assert data["holdout_rms_total"] <= 0.16
    per_joint = data["holdout_rms"]
    assert list(per_joint) == [f"panda_joint{j}" for j in range(1, 8)]
    assert data["holdout_rms_total"] == pytest.approx(math.sqrt(np.mean(np.square(list(per_joint.values())))),
                                                      rel=1e-14)
    log = data["log"]
    assert (log["cutoff_hz"], log["cutoff_from"], log["rate_hz"], log["trim_s"]) == (10, "given", 100, 0.5)
    assert data["fit_samples"] + data["holdout_samples"] == log["samples"]
    assert data["holdout_samples"] == round(0.4 * log["samples"]) and data["holdout"] == 0.4


def _one_error_line(capsys, *parts):
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("dyn-plugin: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("dyn-plugin: error: "), err
    for part in parts:
        assert part in lines[0], err


def test_cli_bad_logs_exit_2_with_one_line_and_write_nothing(panda_urdf, tmp_path, capsys):
    from dyn_plugin.tools.cli import main

    raw = dict(np.load(SLICE))
    short = {k: v[:60] for k, v in raw.items()}        # 0.3 s at 200 Hz
    nan = {**raw, "tau": raw["tau"].copy()}
    nan["tau"][100, 3] = np.nan
    np.savez(tmp_path / "short.npz", **short)
    np.savez(tmp_path / "nan.npz", **nan)
    objects = np.array([None] * 50, dtype=object)
    np.savez(tmp_path / "objects_data.npz", q=objects, qd=objects, qdd=objects, tau=objects)
    outputs = [tmp_path / "out.json", tmp_path / "out.urdf", tmp_path / "out.png"]
    written = ["--json", str(outputs[0]), "--urdf", str(outputs[1]), "--plot", str(outputs[2])]
    arm = [panda_urdf, *(f"--lock={j}" for j in FINGERS)]
    bad_files = dict(_bad_files(tmp_path))
    cases = [
        ([*arm, "--log", str(tmp_path / "text.npz")], ["text.npz", bad_files["text.npz"]]),
        ([*arm, "--log", str(tmp_path / "cut.npz")], ["cut.npz", "damaged or truncated"]),
        ([*arm, "--log", str(tmp_path / "single.npy")], ["single.npy"]),
        ([*arm, "--log", str(tmp_path / "missing.csv")], ["missing.csv", "no column tau2"]),
        ([*arm, "--log", str(tmp_path / "nan.npz")], ["tau has a non-finite value (nan) at sample 100, column 3"]),
        ([*arm, "--log", str(SLICE), "--cutoff", "100"], ["cutoff 100 Hz is at or above the Nyquist frequency"]),
        ([*arm, "--log", str(SLICE), "--cutoff", "10", "--rate", "20"], ["at or above the Nyquist frequency 10 Hz"]),
        ([*arm, "--log", str(SLICE), "--holdout", "1"], ["holdout must be a fraction"]),
        ([*arm, "--log", str(tmp_path / "short.npz"), "--cutoff", "3", "--trim", "0", "--rate", "20"],
         ["the fit part has 4 samples x 7 joints = 28 equations for"]),
        ([panda_urdf, "--log", str(SLICE)], ["q has 7 columns", "has 9 joints", "--lock panda_finger_joint1"]),
        ([*arm, "--data", str(SLICE), "--cutoff", "10"], ["--cutoff applies to --log"]),
        ([*arm, "--log", str(SLICE), "--friction", "bearing"], ["--friction bearing"]),
        # issue #32 item 2: --data given a file that is not an .npz archive
        ([*arm, "--data", str(tmp_path / "text.npz")], ["text.npz", "is not an .npz archive"]),
        ([*arm, "--data", str(tmp_path / "single.npz")], ["single.npz", "single numpy array (.npy)"]),
        ([*arm, "--data", str(tmp_path / "cut_end.npz")], ["cut_end.npz", "damaged or truncated"]),
        ([*arm, "--data", str(tmp_path / "objects_data.npz")], ["objects_data.npz", "pickled"]),
    ]
    for argv, parts in cases:
        assert main(["identify", *argv, *written]) == 2, argv
        _one_error_line(capsys, *parts)
        assert not any(path.exists() for path in outputs), argv


def test_cli_identify_log_physical_writes_the_identified_urdf(panda_urdf, tmp_path, capsys):
    import json

    from dyn_plugin.tools.cli import main

    arm = ["identify", panda_urdf, *(f"--lock={j}" for j in FINGERS), "--log", str(SLICE), "--rate", "50"]
    out, plot = tmp_path / "panda_identified.urdf", tmp_path / "held.png"
    assert main([*arm, "--physical", "--urdf", str(out), "--json", str(tmp_path / "fit.json"),
                 "--plot", str(plot)]) == 0
    data = json.loads((tmp_path / "fit.json").read_text())
    # measured 0.089 N·m; every link a rigid body, so the URDF is written
    assert data["method"] == "physical" and all(data["consistency"].values()) and data["holdout_rms_total"] <= 0.12
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and f"wrote {plot}" in text and "held-out torque RMS" in text
    identified = dp.load_robot(out)
    assert identified.joint_names == tuple(f"panda_joint{j}" for j in range(1, 8))
    # least squares alone is not a rigid body on this log: --urdf is refused, nothing written
    out.unlink()
    assert main([*arm, "--urdf", str(out)]) == 2
    _one_error_line(capsys, "not a rigid body", "--physical")
    assert not out.exists()


def test_numpy_scalars_are_numbers_and_booleans_are_not():
    """rate, cutoff, trim and holdout as numpy scalars (np.int64(100) was refused as "not a
    positive sample rate, got np.int64(100)"); True is no rate."""
    t = np.arange(int(T * FS) + 1) / FS
    plain = dp.prepare_log(t, tones(t), tones(t), qd=tones(t, 1), rate=100, cutoff=FC, trim=1)
    numpy = dp.prepare_log(t, tones(t), tones(t), qd=tones(t, 1), rate=np.int64(100), cutoff=np.float32(FC),
                           trim=np.int64(1))
    assert np.array_equal(plain.q, numpy.q) and np.array_equal(plain.qdd, numpy.qdd)
    assert len(plain.split(np.float32(0.4))[1]) == len(plain.split(0.4)[1])
    with pytest.raises(InputError, match="rate must be a positive sample rate"):
        dp.prepare_log(t, tones(t), tones(t), rate=True)
