"""Closed-form dynamics of small textbook manipulators, written as plain functions.

Every formula is transcribed from a published source (named in the docstrings). None of
them uses dyn_plugin, so they are independent oracles for the library's backends.

Conventions: numpy arrays, 0-based indices; each oracle returns the pieces of
    tau = D(q) qdd + h(q, qd) + c(q)
(Fu's names: D inertia, h velocity terms, c gravity), so callers can compare the
mass matrix, the bias forces (h + c) and the gravity torques separately.
"""
import numpy as np

G0 = 9.8062  # |g| used by both Fu and Schilling (notes §0.2)


def _tau(D, h, c, qdd):
    return D @ np.asarray(qdd, float) + h + c


# ---------------------------------------------------------------------------------
# O1: Fu, Gonzalez & Lee, two-link planar arm, equal lengths (Sec. 3.2.6; notes §3 O1)
# ---------------------------------------------------------------------------------
def fu_two_link_terms(q, qd, m1, m2, l, g=G0):
    """(D, h, c) of Fu's two-link example; y0 up, physical gravity (0, -g, 0)."""
    C1, C2, S2, C12 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[0] + q[1])
    D = np.array([[m1 * l**2 / 3 + 4 * m2 * l**2 / 3 + m2 * l**2 * C2, m2 * l**2 / 3 + m2 * l**2 * C2 / 2],
                  [m2 * l**2 / 3 + m2 * l**2 * C2 / 2, m2 * l**2 / 3]])
    h = np.array([-m2 * S2 * l**2 * qd[1]**2 / 2 - m2 * S2 * l**2 * qd[0] * qd[1],
                  m2 * S2 * l**2 * qd[0]**2 / 2])
    c = np.array([(m1 / 2 + m2) * g * l * C1 + m2 * g * l * C12 / 2,
                  m2 * g * l * C12 / 2])
    return D, h, c


def fu_two_link(q, qd, qdd, m1, m2, l, g=G0):
    """tau of Fu's two-link example (final printed result, Sec. 3.2.6)."""
    return _tau(*fu_two_link_terms(q, qd, m1, m2, l, g), qdd)


def fu_two_link_christoffel(q, m2, l):
    """h_ikm (3.2-33) of Fu's two-link arm, shape (2, 2, 2), 0-based [i, k, m].

    Nonzero: h112 = h121 = h122 = -m2 l^2 S2 / 2 ; h211 = +m2 l^2 S2 / 2 (notes §1.4).
    """
    s = m2 * l**2 * np.sin(q[1]) / 2
    H = np.zeros((2, 2, 2))
    H[0, 0, 1] = H[0, 1, 0] = H[0, 1, 1] = -s
    H[1, 0, 0] = s
    return H


# ---------------------------------------------------------------------------------
# O2: Schilling two-axis planar articulated arm (Sec. 6-5; notes §3 O2)
# ---------------------------------------------------------------------------------
def schilling_two_axis_terms(q, qd, m1, m2, a1, a2, g0=G0):
    """(D, c_velocity, h_gravity) in Fu's order (D, h, c); y0 up."""
    C1, C2, S2, C12 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[0] + q[1])
    D = np.array([[m1 * a1**2 / 3 + m2 * (a1**2 + a1 * a2 * C2 + a2**2 / 3), m2 * (a1 * a2 * C2 / 2 + a2**2 / 3)],
                  [m2 * (a1 * a2 * C2 / 2 + a2**2 / 3), m2 * a2**2 / 3]])
    vel = np.array([-m2 * a1 * a2 * S2 * (qd[0] * qd[1] + qd[1]**2 / 2),
                    m2 * a1 * a2 * S2 * qd[0]**2 / 2])
    grav = np.array([g0 * ((m1 / 2 + m2) * a1 * C1 + m2 * a2 * C12 / 2),
                     g0 * m2 * a2 * C12 / 2])
    return D, vel, grav


def schilling_two_axis_velocity_matrices(q, m2, a1, a2):
    """Schilling's printed C^1, C^2 (row k, col j): velocity term c_i = qd^T C^i qd (notes §3 O2)."""
    s = m2 * a1 * a2 * np.sin(q[1])
    return np.array([s / 2 * np.array([[0.0, 0.0], [-2.0, -1.0]]),
                     s / 4 * np.array([[2.0, 1.0], [-1.0, 0.0]])])


def symmetrized(Ci):
    """Christoffel h_ikm from Schilling's non-symmetric C^i: same quadratic form, symmetric in (k, m)."""
    Ci = np.asarray(Ci, float)
    return (Ci + np.swapaxes(Ci, -1, -2)) / 2


def schilling_two_axis(q, qd, qdd, m1, m2, a1, a2, g0=G0):
    return _tau(*schilling_two_axis_terms(q, qd, m1, m2, a1, a2, g0), qdd)


# ---------------------------------------------------------------------------------
# O3: Schilling three-axis SCARA (Sec. 6-6; notes §3 O3). z0 up, g = (0, 0, -g0).
# ---------------------------------------------------------------------------------
def schilling_scara_terms(q, qd, m1, m2, m3, a1, a2, g0=G0):
    C2, S2 = np.cos(q[1]), np.sin(q[1])
    D11 = (m1 / 3 + m2 + m3) * a1**2 + (m2 + 2 * m3) * a1 * a2 * C2 + (m2 / 3 + m3) * a2**2
    D12 = -(m2 / 2 + m3) * a1 * a2 * C2 - (m2 / 3 + m3) * a2**2
    D22 = (m2 / 3 + m3) * a2**2
    D = np.array([[D11, D12, 0.0], [D12, D22, 0.0], [0.0, 0.0, m3]])
    vel = np.array([-a1 * a2 * S2 * ((m2 + 2 * m3) * qd[0] * qd[1] - (m2 / 2 + m3) * qd[1]**2),
                    (m2 / 2 + m3) * a1 * a2 * S2 * qd[0]**2,
                    0.0])
    grav = np.array([0.0, 0.0, -g0 * m3])
    return D, vel, grav


def schilling_scara_velocity_matrices(q, m2, m3, a1, a2):
    """Schilling's printed C^1, C^2, C^3 of the SCARA (row k, col j) (notes §3 O3)."""
    s = a1 * a2 * np.sin(q[1])
    C1 = s * np.array([[0.0, 0.0, 0.0], [-(m2 + 2 * m3), m2 / 2 + m3, 0.0], [0.0, 0.0, 0.0]])
    C2 = s * np.array([[m2 / 2 + m3, -(m2 / 4 + m3 / 2), 0.0], [m2 / 4 + m3 / 2, 0.0, 0.0], [0.0, 0.0, 0.0]])
    return np.array([C1, C2, np.zeros((3, 3))])


def schilling_scara(q, qd, qdd, m1, m2, m3, a1, a2, g0=G0):
    return _tau(*schilling_scara_terms(q, qd, m1, m2, m3, a1, a2, g0), qdd)


# ---------------------------------------------------------------------------------
# O4: one-axis pendulum, thin rod (Schilling Sec. 6-9; notes §3 O4). y0 up.
# ---------------------------------------------------------------------------------
def pendulum_terms(q, qd, m1, a1, g0=G0):
    D = np.array([[m1 * a1**2 / 3]])
    return D, np.zeros(1), np.array([g0 * m1 * a1 * np.cos(q[0]) / 2])


def pendulum(q, qd, qdd, m1, a1, g0=G0):
    return _tau(*pendulum_terms(q, qd, m1, a1, g0), qdd)


# ---------------------------------------------------------------------------------
# O7: point-mass two-link (derived for Fu Prob. 3.16; notes §3 O7). y0 up.
# ---------------------------------------------------------------------------------
def point_mass_two_link_terms(q, qd, m1, m2, l1, l2, g=G0):
    C1, C2, S2, C12 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[0] + q[1])
    D = np.array([[(m1 + m2) * l1**2 + m2 * l2**2 + 2 * m2 * l1 * l2 * C2, m2 * l2**2 + m2 * l1 * l2 * C2],
                  [m2 * l2**2 + m2 * l1 * l2 * C2, m2 * l2**2]])
    h = np.array([-m2 * l1 * l2 * S2 * (2 * qd[0] * qd[1] + qd[1]**2),
                  m2 * l1 * l2 * S2 * qd[0]**2])
    c = np.array([(m1 + m2) * g * l1 * C1 + m2 * g * l2 * C12, m2 * g * l2 * C12])
    return D, h, c


def point_mass_two_link(q, qd, qdd, m1, m2, l1, l2, g=G0):
    return _tau(*point_mass_two_link_terms(q, qd, m1, m2, l1, l2, g), qdd)


# ---------------------------------------------------------------------------------
# ROBMAT double pendulum (Horn & Linge, "ROBMAT", The Mathematica Journal 4(4), 1994, §5, Out[5]-Out[9]).
# Point masses m[i] at the distal end of link i (DH frame origin, §3 default r = 0),
# gravity field vector {g, 0, 0} in the base frame, i.e. gravity points along +x0.
# ---------------------------------------------------------------------------------
def robmat_configuration_space(q, m1, m2, L1, L2, g):
    """(M, B, C, G) exactly as printed in Out[5]..Out[8]; B is n x n(n-1)/2 = 2 x 1."""
    q1, q2 = q
    M = np.array([[L1**2 * m1 + L1**2 * m2 + 2 * np.cos(q2) * L1 * L2 * m2 + L2**2 * m2,
                   L2 * (np.cos(q2) * L1 + L2) * m2],
                  [L2 * (np.cos(q2) * L1 + L2) * m2, L2**2 * m2]])
    B = np.array([[-(L1 * L2 * m2 * np.sin(q2))], [0.0]])
    C = np.array([[0.0, -(L1 * L2 * m2 * np.sin(q2))],
                  [L1 * L2 * m2 * np.sin(q2), 0.0]])
    G = np.array([g * (L1 * m1 * np.sin(q1) + L1 * m2 * np.sin(q1) + L2 * m2 * np.sin(q1 + q2)),
                  g * L2 * m2 * np.sin(q1 + q2)])
    return M, B, C, G


def robmat_newton_euler(q, qd, qdd, m1, m2, L1, L2, g):
    """F = NewtonEuler[q, {g,0,0}] exactly as printed in Out[9]."""
    (q1, q2), (d1, d2), (dd1, dd2) = q, qd, qdd
    F1 = (g * L1 * m1 * np.sin(q1) + g * L1 * m2 * np.sin(q1) + g * L2 * m2 * np.sin(q1 + q2)
          - 2 * L1 * L2 * m2 * np.sin(q2) * d1 * d2 - L1 * L2 * m2 * np.sin(q2) * d2**2
          + L1**2 * m1 * dd1 + L1**2 * m2 * dd1 + 2 * np.cos(q2) * L1 * L2 * m2 * dd1
          + L2**2 * m2 * dd1 + np.cos(q2) * L1 * L2 * m2 * dd2 + L2**2 * m2 * dd2)
    F2 = L2 * m2 * (g * np.sin(q1 + q2) + L1 * np.sin(q2) * d1**2
                    + np.cos(q2) * L1 * dd1 + L2 * dd1 + L2 * dd2)
    return np.array([F1, F2])


# ---------------------------------------------------------------------------------
# Macsyma two-link arm with point payload (H. Jack, 1990 thesis, App. B, Fortran of B.9).
# Transcribed literally from the fortbigopt output (constants, inverse, forward).
# ---------------------------------------------------------------------------------
def macsyma_constants(m1, m2, mp, l1, l2, i_1, i_2, gravity):
    """r1..r6 from the fortbigopt(zz) block (Jack 1990, App. B)."""
    b3 = gravity * l1
    b1 = 4 * mp
    r1 = 4 * b3 * m2 + 2 * b3 * m1 + b1 * b3
    pfx4 = l2**2
    pfx2 = l1**2
    pfx3 = 4 * pfx2
    pfx1 = 4 * i_2
    r2 = mp * (4 * pfx4 + pfx3) + m2 * (pfx4 + pfx3) + m1 * pfx2 + pfx1 + 4 * i_1
    b4 = gravity * l2
    r3 = 2 * b4 * m2 + b1 * b4
    b2 = l1 * l2
    b5 = b2 * m2
    r4 = 8 * b2 * mp + 4 * b5
    r5 = 2 * b5 + b1 * b2
    r6 = m2 * pfx4 + b1 * pfx4 + pfx1
    return r1, r2, r3, r4, r5, r6


def macsyma_torques(q, qd, qdd, r):
    """torque1, torque2 from fortbigopt(['torque1=tt1, 'torque2=tt2]) (lines 827-869)."""
    r1, r2, r3, r4, r5, r6 = r
    t1, t2 = q
    pfx1 = np.cos(t1)
    pfx4 = pfx1**2
    b3 = pfx4 * r5
    pfx5 = np.sin(t1)
    pfx6 = pfx5**2
    b1 = pfx6 * r5
    pfx11 = b3 + b1
    pfx12 = qdd[1]
    pfx9 = qd[0]
    pfx10 = qd[1]
    pfx8 = np.sin(t2)
    b2 = pfx5 * r3
    pfx7 = np.cos(t2)
    pfx3 = pfx1 * r3
    pfx2 = qdd[0]
    b5 = pfx4 * r4
    b4 = pfx6 * r4
    torque1 = (pfx12 * (r6 + pfx11 * pfx7) + pfx2 * r2 + pfx1 * r1 + (-b5 - b4) * pfx10 * pfx8 * pfx9
               + (-b3 - b1) * pfx10**2 * pfx8 - b2 * pfx8 + (pfx3 + (b5 + b4) * pfx2) * pfx7) / 4.0
    torque2 = (pfx2 * r6 + pfx12 * r6 + pfx8 * (pfx11 * pfx9**2 - b2) + (pfx3 + pfx11 * pfx2) * pfx7) / 4.0
    return np.array([torque1, torque2])


def macsyma_forward(q, qd, tau, r):
    """diff(t1,t,2), diff(t2,t,2) from the forward-dynamics fortbigopt (lines 977-1039)."""
    r1, r2, r3, r4, r5, r6 = r
    t1, t2 = q
    torque1, torque2 = tau
    pfx1 = np.cos(t2)
    b7 = pfx1 * r5
    b9 = 4 * b7
    b6 = 4 * r6
    pfx9 = np.sin(t1)
    pfx2 = r5**2
    pfx7 = qd[0]
    pfx8 = pfx7**2
    pfx10 = np.sin(t2)
    pfx5 = np.cos(t1)
    pfx6 = pfx5 * r1 * r6
    pfx11 = qd[1]
    b8 = pfx10 * pfx11
    b3 = pfx7 * r4
    b12 = b3 * r6
    pfx12 = pfx11**2
    b5 = pfx10 * pfx12
    b4 = r5 * r6
    b2 = r3 * r5
    pfx3 = pfx1**2
    b1 = pfx3 * pfx5
    pfx4 = 1 / (r6**2 + pfx1 * (2 * r5 - r4) * r6 - r2 * r6 + pfx2 * pfx3)
    t1dd = pfx4 * ((b9 + b6) * torque2 - b6 * torque1 + pfx10 * (pfx1 * (b2 * pfx9 - pfx2 * pfx8) - b4 * pfx8)
                   + pfx6 - b12 * b8 - b4 * b5 - b1 * b2)
    b11 = pfx8 * r5
    b14 = r2 * r3
    b10 = r3 * r6
    b13 = r3 * r4
    t2dd = -pfx4 * ((4 * pfx1 * r4 + 4 * r2) * torque2 + (-b9 - b6) * torque1
                    + pfx1 * pfx5 * (r1 * r5 - b14 + b10)
                    + pfx10 * (pfx1 * ((b13 - b2) * pfx9 - b11 * r4) - b11 * r2 + (b14 - b10) * pfx9)
                    + pfx6 + b5 * (-pfx1 * pfx2 - b4) + (-b3 * b7 - b12) * b8 + b1 * (b2 - b13))
    return np.array([t1dd, t2dd])


class PinocchioJointMap:
    """Our joint-space vectors in pinocchio's layout, for a class with ``pm`` (pinocchio
    model), ``n``, and per joint of ours ``iq``, ``nq`` (2 for a continuous joint, whose q
    is (cos, sin) in pinocchio) and ``iv``."""

    def pin_q(self, q):
        out = np.zeros(self.pm.nq)
        for i in range(self.n):
            if self.nq[i] == 2:
                out[self.iq[i]:self.iq[i] + 2] = np.cos(q[i]), np.sin(q[i])
            else:
                out[self.iq[i]] = q[i]
        return out

    def pin_v(self, v):
        out = np.zeros(self.pm.nv)
        out[self.iv] = v
        return out
