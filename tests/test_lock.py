"""Locked joints (dyn_plugin/locking.py, RobotModel.lock, load_robot(lock=...), --lock) held to
pinocchio's ``buildReducedModel(model, joints_to_lock, q_reference)``: τ (rnea), M (crba),
frame placements and Jacobians of the reduced model, through every backend of ours and the
pinocchio backend; the pybullet backend on the locked model against pinocchio (on the
inertias pybullet simulates, as tests/test_reference_floor.py); the refusals; the CLI."""

import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin
import pybullet_data
import pytest
from urdf_factory import random_tree_urdf

import dyn_plugin as dp
from dyn_plugin.errors import InputError
from dyn_plugin.locking import lock_joints
from dyn_plugin.sampling import random_states
from dyn_plugin.tools.cli import build_parser, main
from dyn_plugin.backends.pybullet_diagnostics import pybullet_model
from dyn_plugin.urdf import urdf_text

EXACT = 1e-12          # relative: the reduced model is the same arithmetic as pinocchio's, to round-off
PYBULLET = 1e-9        # pybullet against pinocchio on the inertias it simulates (tests/test_reference_floor.py)
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
PYBULLET_PANDA = Path(pybullet_data.getDataPath()) / "franka_panda" / "panda.urdf"


def erd_panda():
    """example-robot-data's Panda (a [test] dependency), or a skip where it is not installed."""
    try:
        files = metadata.distribution("example-robot-data").files or ()
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install 'dyn_plugin[test]')")
    found = [f for f in files if str(f).endswith("panda_description/urdf/panda.urdf")]
    if not found:
        pytest.skip("example-robot-data has no panda_description/urdf/panda.urdf")
    return Path(found[0].locate()).resolve()


@pytest.fixture(params=["example-robot-data", "pybullet_data"])
def panda(request):
    return erd_panda() if request.param == "example-robot-data" else PYBULLET_PANDA


def load(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the <mimic> warning of an unlocked Panda
        return dp.load_robot(path, **options)


def tree(seed, joints=7, floating=False, branched=True):
    return dp.load_urdf_string(random_tree_urdf(np.random.default_rng(seed), joints, branched=branched),
                               floating_base=floating)


# -- the oracle: pinocchio's reduced model -------------------------------------------------------


def reduced_pinocchio(full, held: dict):
    """pinocchio's buildReducedModel of ``full``'s URDF, ``held`` {joint: value} at q_reference."""
    text = urdf_text(full)
    pm = pin.buildModelFromXML(text, pin.JointModelFreeFlyer()) if full.floating_base else pin.buildModelFromXML(text)
    q_reference, ids = pin.neutral(pm), []
    for name, value in held.items():
        jid = pm.getJointId(name)
        j = pm.joints[jid]
        q_reference[j.idx_q:j.idx_q + j.nq] = [np.cos(value), np.sin(value)] if j.nq == 2 else [value]
        ids.append(jid)
    reduced = pin.buildReducedModel(pm, ids, q_reference)
    reduced.gravity.linear = np.array(full.gravity)
    return reduced


class Oracle:
    """pinocchio's reduced model, in our coordinates (joints matched by name)."""

    def __init__(self, full, locked, held):
        self.model, self.locked = reduced_pinocchio(full, held), locked
        self.data = self.model.createData()
        base_v = locked.nv - len(locked.independent_joints)
        self.order = list(range(base_v))                 # pinocchio's v index of each of our velocities
        self.joints = [self.model.joints[self.model.getJointId(name)] for name in locked.independent_joints]
        self.order += [j.idx_v for j in self.joints]

    def q(self, q):
        out, base_q = pin.neutral(self.model), self.locked.nq - len(self.joints)
        out[:base_q] = q[:base_q]
        for value, j in zip(q[base_q:], self.joints):
            out[j.idx_q:j.idx_q + j.nq] = [np.cos(value), np.sin(value)] if j.nq == 2 else [value]
        return out

    def v(self, v):
        out = np.zeros(self.model.nv)
        out[self.order] = v
        return out

    def tau(self, q, v, a):
        return pin.rnea(self.model, self.data, self.q(q), self.v(v), self.v(a))[self.order]

    def mass_matrix(self, q):
        M = pin.crba(self.model, self.data, self.q(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.order, self.order)]

    def frame(self, q, name):
        """(placement (4, 4), LOCAL_WORLD_ALIGNED Jacobian (6, nv)) of BODY frame ``name``."""
        fid = self.model.getFrameId(name, pin.BODY)
        assert fid < len(self.model.frames), name
        qp = self.q(q)
        pin.framesForwardKinematics(self.model, self.data, qp)
        J = pin.computeFrameJacobian(self.model, self.data, qp, fid, pin.LOCAL_WORLD_ALIGNED)
        return self.data.oMf[fid].homogeneous, J.reshape(6, self.model.nv)[:, self.order]   # (6,) when nv = 1


def relative(x, reference):
    return float(np.abs(np.asarray(x) - reference).max() / max(np.abs(reference).max(), 1e-300))


def worst_against_pinocchio(full, locked, held, states=6, seed=0, backends=("newton_euler", "lagrange_euler",
                                                                             "pinocchio")):
    """max over backends and states of the relative error of τ and of M against the oracle."""
    oracle, s = Oracle(full, locked, held), random_states(locked, states, seed=seed)
    worst = 0.0
    for name in backends:
        be = dp.get_backend(name, locked)
        tau, M = be.inverse_dynamics(s.q, s.qd, s.qdd), be.mass_matrix(s.q)
        for k in range(states):
            worst = max(worst, relative(tau[k], oracle.tau(s.q[k], s.qd[k], s.qdd[k])),
                        relative(M[k], oracle.mass_matrix(s.q[k])))
    return worst


# -- (a) the Panda with its fingers locked: a 7-DOF arm --------------------------------------------


def test_panda_with_fingers_locked_is_pinocchios_reduced_arm(panda):
    full = load(panda)
    for held in ({name: 0.0 for name in FINGERS}, {"panda_finger_joint1": 0.013, "panda_finger_joint2": 0.037}):
        locked = lock_joints(full, list(held) if not any(held.values()) else held)
        assert locked.n == 7 and locked.joint_names == full.joint_names[:7]
        assert locked.total_mass() == pytest.approx(full.total_mass(), rel=1e-15)
        assert set(locked.frame_names) == set(full.frame_names)
        assert worst_against_pinocchio(full, locked, held) <= EXACT


def test_load_robot_lock_is_model_lock_and_no_mimic_warning(panda):
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # both mimic joints locked: nothing to warn about
        locked = dp.load_robot(panda, lock={"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.01})
    again = lock_joints(load(panda), {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.01})
    for key in ("masses", "coms", "inertias", "joint_rotations", "joint_positions", "base_mass", "base_inertia"):
        np.testing.assert_array_equal(getattr(locked, key), getattr(again, key))
    with pytest.warns(dp.errors.URDFWarning, match="panda_finger_joint2"):
        dp.load_robot(panda, lock=["panda_finger_joint1"])          # the other finger still moves


# -- (b) random trees: arbitrary subsets, non-zero values, inner joints with subtrees ---------------


def held_values(model, rng, count):
    """{joint: value within its limits, away from 0}, an inner joint (one with a subtree) first."""
    inner = [i for i in range(model.n) if i in model.parents]
    chosen = [int(rng.choice(inner))]
    chosen += [int(i) for i in rng.permutation(model.n) if i not in chosen][:count - 1]
    held = {}
    for i in chosen:
        low, high = max(model.lower[i], -3.0), min(model.upper[i], 3.0)
        held[model.joint_names[i]] = float(low + (high - low) * rng.uniform(0.55, 0.95))
    return held


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_match_pinocchio(seed):
    rng = np.random.default_rng(100 + seed)
    full = tree(seed, joints=int(rng.integers(4, 9)))
    held = held_values(full, rng, int(rng.integers(1, full.n)))
    locked = lock_joints(full, held)
    oracle = Oracle(full, locked, held)
    assert locked.joint_names == tuple(oracle.model.names[1:])          # pinocchio's order, locked ones left out
    assert worst_against_pinocchio(full, locked, held, seed=seed) <= EXACT


@pytest.mark.parametrize("seed", range(3))
def test_the_locked_urdf_reads_back_as_the_locked_model(seed):
    """The URDF the reference engines load is the same robot: same joints in the same order,
    same bodies (to round-off: rpy written exactly, read back through sin/cos), same frames."""
    rng = np.random.default_rng(200 + seed)
    full = tree(seed + 10, joints=7)
    locked = lock_joints(full, held_values(full, rng, 3))
    again = dp.load_urdf_string(urdf_text(locked))
    assert again.joint_names == locked.joint_names and again.frame_names == locked.frame_names
    assert np.array_equal(again.parents, locked.parents)
    for key in ("masses", "coms", "inertias", "joint_rotations", "joint_positions"):
        assert relative(getattr(again, key), getattr(locked, key)) <= EXACT, key
    assert again.base_mass == pytest.approx(locked.base_mass, rel=1e-15)
    for a, b in zip(again.frames, locked.frames):
        assert a.link == b.link and relative(a.position, b.position) <= EXACT


def test_the_locked_robot_is_named_as_such():
    """What is looked up by a robot's name (the thesis's Stanford-arm schedules, published
    operation counts) must not take the locked robot for the original."""
    from dyn_plugin.parallel import thesis

    stanford = dp.load_robot("stanford")
    locked = lock_joints(stanford, {stanford.joint_names[5]: 0.25})
    assert locked.name == f"stanford (locked {stanford.joint_names[5]}=0.25)"
    assert dp.load_urdf_string(urdf_text(locked)).name == locked.name
    assert thesis.reference(stanford, "customised") is not None and thesis.reference(locked, "customised") is None


def test_empty_lock_is_the_same_model():
    full = tree(1)
    assert lock_joints(full, []) is full and lock_joints(full, {}) is full


# -- (c) a floating base ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_floating_base_matches_pinocchio(seed):
    rng = np.random.default_rng(300 + seed)
    full = tree(seed + 20, joints=6, floating=True)
    held = held_values(full, rng, 3)
    on_base = next(name for name, parent in zip(full.joint_names, full.parents) if parent < 0)
    held.setdefault(on_base, 0.4)                           # a body merged into the floating base itself
    held[on_base] = float(np.clip(held[on_base], full.lower[full.joint_names.index(on_base)],
                                  full.upper[full.joint_names.index(on_base)]))
    locked = lock_joints(full, held)
    assert locked.floating_base and locked.nv == full.nv - len(held)
    assert locked.base_mass > full.base_mass
    assert worst_against_pinocchio(full, locked, held, seed=seed) <= EXACT


def test_locking_every_joint_is_refused():
    """n = 0 is not taken everywhere (a friction study of a URDF without moving joints fails),
    so a lock leaves at least one joint free; with mimic joints, a leader locks its follower."""
    for model in (tree(30, joints=5, floating=True), tree(31, joints=3)):
        held = {name: float(np.clip(0.1, model.lower[i], model.upper[i])) for i, name in enumerate(model.joint_names)}
        with pytest.raises(InputError, match=r"locking every joint of robot 'random_tree' \(.*\) leaves no moving joint"):
            lock_joints(model, held)
    with pytest.raises(InputError, match="locking every joint"):
        lock_joints(load(PYBULLET_PANDA, mimic=True), [f"panda_joint{k}" for k in range(1, 8)] + ["panda_finger_joint1"])


# -- (d) frames and Jacobians of locked links -------------------------------------------------------


def frame_errors(full, locked, held, frames, states=4):
    oracle, s = Oracle(full, locked, held), random_states(locked, states, seed=5)
    worst = 0.0
    for name in ("newton_euler", "pinocchio"):
        be = dp.get_backend(name, locked)
        for frame in frames:
            T, J = be.frame_placement(s.q, frame), be.frame_jacobian(s.q, frame)
            for k in range(states):
                T_ref, J_ref = oracle.frame(s.q[k], frame)
                worst = max(worst, relative(T[k], T_ref), relative(J[k], J_ref))
    return worst


def test_frames_of_locked_panda_links(panda):
    full = load(panda)
    held = {"panda_finger_joint1": 0.021, "panda_finger_joint2": 0.034}
    locked = lock_joints(full, held)
    assert locked.frame("panda_leftfinger")[0] == locked.link_names.index("panda_link7")
    assert frame_errors(full, locked, held, ("panda_leftfinger", "panda_rightfinger", "panda_hand")) <= EXACT


@pytest.mark.parametrize("seed", range(2))
def test_frames_of_locked_links_in_random_trees(seed):
    rng = np.random.default_rng(400 + seed)
    full = tree(seed + 40, joints=7)
    held = held_values(full, rng, 3)
    locked = lock_joints(full, held)
    moved = [f.name for f in full.frames if f.link in {full.link_names[full.joint_names.index(j)] for j in held}]
    assert moved
    assert frame_errors(full, locked, held, moved) <= EXACT


def test_one_joint_left_frames_and_dynamics():
    """nv = 1 after the lock (pinocchio returns a Jacobian of shape (6,) there)."""
    full = tree(45, joints=4, branched=False)
    held = {name: 0.0 if full.lower[i] <= 0.0 <= full.upper[i] else float(full.upper[i])
            for i, name in enumerate(full.joint_names[1:], start=1)}
    locked = lock_joints(full, held)
    assert locked.n == 1
    assert worst_against_pinocchio(full, locked, held) <= EXACT
    assert frame_errors(full, locked, held, [f.name for f in full.frames[-2:]]) <= EXACT


# -- the reference engines on the locked model ----------------------------------------------------


@pytest.mark.parametrize("which", ["panda", "tree", "floating"])
def test_pybullet_on_the_locked_model_agrees_with_pinocchio(which):
    if which == "panda":
        locked = load(PYBULLET_PANDA, lock={"panda_finger_joint1": 0.01, "panda_finger_joint2": 0.03})
    else:
        full = tree(50, joints=6, floating=which == "floating")
        locked = lock_joints(full, held_values(full, np.random.default_rng(50), 2))
    pybullet = dp.get_backend("pybullet", locked)
    pinocchio = dp.get_backend("pinocchio", pybullet_model(locked) or locked)
    s = random_states(locked, 5, seed=2)
    assert relative(pybullet.inverse_dynamics(s.q, s.qd, s.qdd), pinocchio.inverse_dynamics(s.q, s.qd, s.qdd)) \
        <= PYBULLET
    assert relative(pybullet.mass_matrix(s.q), pinocchio.mass_matrix(s.q)) <= PYBULLET


def test_a_payload_on_a_locked_link_reaches_pinocchio(panda):
    locked = load(panda, lock=list(FINGERS)).with_payload("panda_leftfinger", 0.3, com=(0.01, 0.0, 0.02))
    s = random_states(locked, 4, seed=3)
    ours, theirs = (dp.get_backend(name, locked) for name in ("newton_euler", "pinocchio"))
    assert relative(ours.inverse_dynamics(s.q, s.qd, s.qdd), theirs.inverse_dynamics(s.q, s.qd, s.qdd)) <= EXACT


LINK_WITHOUT_INERTIAL = """<?xml version="1.0"?>
<robot name="bare"><link name="base"/><link name="hub"/>
  <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02"
    iyz="0" izz="0.02"/></inertial></link>
  <joint name="turn" type="revolute"><parent link="base"/><child link="hub"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="lift" type="revolute"><parent link="hub"/><child link="arm"/><origin xyz="0 0 0.2"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_link_without_inertial_locked_onto_the_base_moves_only_with_a_floating_base():
    """pybullet gives a link without <inertial> 1 kg: a moving link's alteration, the base's
    only when the base floats (RobotModel.pybullet_alterations)."""
    model = dp.load_urdf_string(LINK_WITHOUT_INERTIAL)
    assert model.links_without_inertial == ("hub",) and model.pybullet_alterations()
    locked = lock_joints(model, {"turn": 0.5})
    assert (locked.links_without_inertial, locked.base_links_without_inertial) == ((), ("base", "hub"))
    assert not locked.pybullet_alterations() and locked.with_floating_base().pybullet_alterations()


# -- mimic joints -----------------------------------------------------------------------------------


def test_locking_a_mimic_leader_locks_its_follower():
    held = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}       # the Panda's multiplier 1, offset 0
    by_leader = lock_joints(load(PYBULLET_PANDA, mimic=True), {"panda_finger_joint1": 0.02})
    independent = lock_joints(load(PYBULLET_PANDA), held)
    assert by_leader.n == 7 and not by_leader.mimic
    for key in ("masses", "coms", "inertias", "joint_rotations", "joint_positions"):
        np.testing.assert_array_equal(getattr(by_leader, key), getattr(independent, key))
    assert "<mimic" not in urdf_text(by_leader)
    both = lock_joints(load(PYBULLET_PANDA, mimic=True), list(FINGERS))          # the follower at the leader's value
    np.testing.assert_array_equal(both.coms, lock_joints(load(PYBULLET_PANDA), list(FINGERS)).coms)


def test_a_mimic_follower_is_not_locked_alone_nor_elsewhere():
    model = load(PYBULLET_PANDA, mimic=True)
    with pytest.raises(InputError, match="'panda_finger_joint2' of robot 'panda' follows joint 'panda_finger_joint1'"):
        lock_joints(model, ["panda_finger_joint2"])
    with pytest.raises(InputError, match="holds it at 0.02, not 0.01"):
        lock_joints(model, {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.01})


# -- refusals ---------------------------------------------------------------------------------------


def test_refusals_name_the_joint_and_what_is_valid():
    model = load(PYBULLET_PANDA)
    with pytest.raises(InputError, match="no joint 'wrist' to lock; its joints are: 'panda_joint1',"):
        lock_joints(model, ["wrist"])
    for value in (np.nan, np.inf):
        with pytest.raises(InputError, match="joint 'panda_joint2' must be finite"):
            lock_joints(model, {"panda_joint2": value})
    with pytest.raises(InputError, match=r"0.05 m of joint 'panda_finger_joint1' is outside its limits \[0.0, 0.04\] m"):
        lock_joints(model, {"panda_finger_joint1": 0.05})
    with pytest.raises(InputError, match=r"0.5 rad of joint 'panda_joint4' is outside its limits \[-3.1416, 0.0\] rad"):
        lock_joints(model, {"panda_joint4": 0.5})
    with pytest.raises(InputError, match="must be a number"):
        lock_joints(model, {"panda_joint2": "0.1"})
    with pytest.raises(InputError, match="list of joint names or a dict"):
        lock_joints(model, 3)
    continuous = tree(60)
    name = next(n for n, c in zip(continuous.joint_names, continuous.continuous) if c)
    assert lock_joints(continuous, {name: 12.0}).n == continuous.n - 1       # no limits: any finite angle


# -- the command line ------------------------------------------------------------------------------


VERBS = {"validate": ["validate", "--robot", "puma560"], "friction": ["friction", "puma560"],
         "dataset": ["dataset", "puma560", "--states", "10", "--out", "x.zarr"], "codegen": ["codegen", "puma560"],
         "schedule": ["schedule", "puma560"], "identify": ["identify", "puma560", "--simulate"],
         "equations": ["equations", "puma560"], "info": ["info", "puma560"], "bench": ["bench", "--robot", "puma560"]}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_that_takes_a_robot_takes_lock(verb):
    args = build_parser().parse_args(VERBS[verb] + ["--lock", "joint_3=0.5", "--lock", "joint_6"])
    assert args.lock == [("joint_3", 0.5), ("joint_6", None)]


def test_bench_and_suites_load_their_robots_locked(tmp_path):
    from dyn_plugin.tools import validate
    from dyn_plugin.tools.bench.runner import resolve

    model, _ = resolve(["puma560"], ops=["ID"], sizes=[1], lock={"joint6": 0.1})["models"]["puma560 (locked joint6=0.1)"]
    assert model.n == 5
    suite = tmp_path / "locked.toml"
    suite.write_text('robots = ["puma560"]\nbackends = ["newton_euler"]\nreferences = ["pinocchio"]\n'
                     'quantities = ["tau"]\nlock = { joint5 = -0.2 }\n')
    assert validate.load_suite(str(suite)).model("puma560").joint_names == ("joint1", "joint2", "joint3", "joint4",
                                                                               "joint6")
    suite.write_text(suite.read_text().replace("lock = { joint5 = -0.2 }", 'lock = "joint5"'))
    with pytest.raises(dp.errors.DynPluginError, match="lock must be a table"):
        validate.load_suite(str(suite))


def exit_code(argv):
    """main's exit code, also where argparse exits (a bad option value)."""
    try:
        return main(argv)
    except SystemExit as exit:
        return exit.code


def test_cli_lock_exit_codes(capsys):
    panda = str(PYBULLET_PANDA)
    assert main(["info", panda, "--lock", FINGERS[0], "--lock", f"{FINGERS[1]}=0.02"]) == 0
    out = capsys.readouterr()
    assert "panda (locked panda_finger_joint1=0, panda_finger_joint2=0.02): 7 joints" in " ".join(out.out.split())
    assert "mimic" not in out.err
    for bad, message in ((["--lock", "wrist"], "no joint 'wrist' to lock"),
                         (["--lock", "panda_joint2=abc"], "the value after '=' must be a number"),
                         (["--lock", "=1"], "--lock needs JOINT or JOINT=VALUE"),
                         (["--lock", "panda_joint2=7"], "outside its limits"),
                         (["--lock", "panda_joint2=1", "--lock", "panda_joint2=2"], "given twice")):
        assert exit_code(["info", panda, *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_validate_with_a_lock_passes(capsys):
    assert main(["validate", "--robot", str(PYBULLET_PANDA), "--lock", FINGERS[0], "--lock", FINGERS[1],
                 "--backend", "newton_euler", "--against", "pinocchio", "--quantity", "tau", "M",
                 "--samples", "5"]) == 0
    assert "all passed" in capsys.readouterr().out
    assert main(["validate", "--suite", "zoo", "--lock", FINGERS[0]]) == 2
