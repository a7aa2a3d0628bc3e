"""Why pybullet's dynamics of a model differ from pinocchio's: Bullet's diagonalisation of
the link inertias (:func:`bullet_diagonalize`), what it drops off the diagonal
(:func:`pybullet_dropped_inertia`), the model pybullet simulates (:func:`pybullet_model`),
and the reasons in words (:func:`pybullet_differences`, with the model's own
``pybullet_alterations``).  ``dyn-plugin validate`` gives them where its references disagree.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["bullet_diagonalize", "pybullet_differences", "pybullet_dropped_inertia", "pybullet_model"]


def bullet_diagonalize(inertia: np.ndarray, threshold: float = 1e-6, max_steps: int = 30) -> tuple:
    """``(rotation, moments)`` with inertia ≈ rotation diag(moments) rotationᵀ, as pybullet
    computes them: Bullet's Jacobi method (``btMatrix3x3::diagonalize``, LinearMath/
    btMatrix3x3.h), with the arguments of ``BulletURDFImporter::getMassAndInertia2``
    (threshold 1e-6, 30 steps).  It stops one rotation after every off-diagonal entry is
    below ``threshold`` × the trace, and pybullet keeps only the diagonal: what remains
    off it is dropped."""
    m, rotation, eps = np.array(inertia, dtype=float), np.eye(3), np.finfo(float).eps
    step = max_steps
    while step > 0:
        p, q, r = max(((0, 1, 2), (0, 2, 1), (1, 2, 0)), key=lambda pqr: abs(m[pqr[0], pqr[1]]))  # first of the largest
        largest, t = abs(m[p, q]), threshold * np.abs(np.diag(m)).sum()
        if largest <= t:
            if largest <= eps * t:
                break
            step = 1
        mpq = m[p, q]
        theta = (m[q, q] - m[p, p]) / (2 * mpq)
        theta2 = theta * theta
        if theta2 * theta2 < 10 / eps:
            t = 1 / (theta + np.sqrt(1 + theta2)) if theta >= 0 else 1 / (theta - np.sqrt(1 + theta2))
            cos = 1 / np.sqrt(1 + t * t)
        else:  # nearly diagonal
            t = 1 / (theta * (2 + 0.5 / theta2))
            cos = 1 - 0.5 * t * t
        sin = cos * t
        m[p, q] = m[q, p] = 0.0
        m[p, p], m[q, q] = m[p, p] - t * mpq, m[q, q] + t * mpq
        m[r, p], m[r, q] = cos * m[r, p] - sin * m[r, q], cos * m[r, q] + sin * m[r, p]
        m[p, r], m[q, r] = m[r, p], m[r, q]
        column_p, column_q = rotation[:, p].copy(), rotation[:, q].copy()
        rotation[:, p], rotation[:, q] = cos * column_p - sin * column_q, cos * column_q + sin * column_p
        step -= 1
    return rotation, np.diag(m).copy()


def pybullet_dropped_inertia(model, relative: float = 1e-12) -> dict:
    """Moving URDF link -> ``(dropped, largest)``: what pybullet drops off the diagonal of
    the link's ``<inertia>`` (kg·m², the largest entry of the remainder of
    :func:`bullet_diagonalize`) and the inertia's largest entry, where the first exceeds
    ``relative`` × the second (round-off is 1e-16); largest first.  An inertia with one
    off-diagonal term is diagonalised exactly (one rotation); with more, within 1e-6 of its
    trace only (Panda's panda_link1: 5.8e-9 of 0.71 kg·m²)."""
    from ..urdf.reading import parse_xml, read_links
    from ..urdf.writing import urdf_text

    root, _ = parse_xml(urdf_text(model), model.name)
    fixed = {j.find("child").get("link"): j.find("parent").get("link") for j in root.findall("joint")
             if j.get("type") == "fixed" and j.find("child") is not None and j.find("parent") is not None}
    found = {}
    for link, inertial in read_links(root, model.name).items():
        top = link
        while top in fixed:
            top = fixed[top]
        if inertial is None or (top == model.base_link and not model.floating_base):  # a fixed base moves nothing
            continue
        rotation, moments = bullet_diagonalize(inertial.inertia)
        dropped = float(np.abs(rotation @ np.diag(moments) @ rotation.T - inertial.inertia).max())
        if dropped > relative * np.abs(inertial.inertia).max():
            found[link] = (dropped, float(np.abs(inertial.inertia).max()))
    return dict(sorted(found.items(), key=lambda item: -item[1][0]))


def pybullet_differences(model) -> list:
    """Why pybullet's dynamics of ``model`` differ from pinocchio's, one sentence each:
    ``model.pybullet_alterations()`` and :func:`pybullet_dropped_inertia`."""
    dropped = pybullet_dropped_inertia(model)
    return list(model.pybullet_alterations()) + ([
        "pybullet diagonalises a link inertia with off-diagonal terms (Bullet's Jacobi method, stopping at 1e-6 of "
        "the trace) and drops what is left off the diagonal: " + ", ".join(
            f"link {link!r} {d:.1e} kg·m² (entries up to {top:.2g})" for link, (d, top) in dropped.items())]
        if dropped else [])


def pybullet_model(model):
    """``model`` with the link inertias pybullet simulates, each ``<inertia>`` replaced by
    rotation diag(moments) rotationᵀ of :func:`bullet_diagonalize`; None when that changes
    none.  (Panda, 250 states: pinocchio's q̈ on this model is pybullet's to 3e-13, on the
    URDF's to 6e-8.)"""
    from lxml import etree

    from ..urdf.reading import load_urdf_string, parse_xml
    from ..urdf.writing import urdf_text

    root, _ = parse_xml(urdf_text(model), model.name)
    keys, changed = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), False
    for element in root.iterfind("link/inertial/inertia"):
        xx, xy, xz, yy, yz, zz = (float(element.get(key)) for key in keys)
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        rotation, moments = bullet_diagonalize(inertia)
        simulated = rotation @ np.diag(moments) @ rotation.T
        if not np.array_equal(simulated, inertia):
            changed = True
            for key, (i, j) in zip(keys, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
                element.set(key, repr(float(simulated[i, j])))
    if not changed:
        return None
    with warnings.catch_warnings():  # the model's own warnings were shown
        warnings.simplefilter("ignore")
        return load_urdf_string(etree.tostring(root, encoding="unicode"), gravity=model.gravity, source=model.name,
                                floating_base=model.floating_base, mimic=bool(model.mimic))
