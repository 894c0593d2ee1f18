"""Cyclic training through the server (docs/certificate.md): 200 passes over breast_cancer's 569
rows keep 569 rows, each standing for its copies, and the certificate is the exact optimum over
every example, against cvxopt's solution of the same SVM with one weight per row; the same for a
kernel model (rbf), against cvxopt's solution of the weighted kernel SVM's dual."""
import time

import numpy as np
from cvxopt import matrix, solvers
from sklearn.datasets import load_breast_cancer

from perceptron.v1 import perceptron_pb2 as pb

PASSES = 200


def weighted_svm(X, y, C, weights):
    """P* = min 1/2 ||v||^2 + C sum_t weight_t max(0, 1 - y_t v.x_t) by cvxopt's QP: (primal,
    dual) objectives, which bracket it."""
    n, w = X.shape
    P = np.zeros((w + n, w + n))
    P[:w, :w] = np.eye(w)
    q = np.concatenate([np.zeros(w), C * weights])
    G = np.block([[-(y[:, None] * X), -np.eye(n)], [np.zeros((n, w)), -np.eye(n)]])
    h = np.concatenate([-np.ones(n), np.zeros(n)])
    solvers.options.update(show_progress=False, abstol=1e-10, reltol=1e-10, feastol=1e-10,
                           maxiters=200)
    r = solvers.qp(matrix(P), matrix(q), matrix(G), matrix(h))
    assert r["status"] == "optimal", r["status"]
    return r["primal objective"], r["dual objective"]


def learn_cyclically(model, X, y, passes):
    """passes over (X, y), then its first 50 rows 3 times more (some rows more often than
    others); once the certificate has settled over every example, it and the rows' counts,
    the kept rows checked to be the distinct ones, each standing for its copies."""
    for _ in range(passes):
        model.learn(X, y)
    for _ in range(3):
        model.learn(X[:50], y[:50])
    n = passes * len(y) + 3 * 50
    end = time.monotonic() + 120
    while True:
        c = model.status().stats.certificate
        if c.available and c.converged and c.solved == c.examples == n:
            break
        assert time.monotonic() < end, f"the certificate did not settle: {c}"
        time.sleep(0.01)  # a poll's pause
    assert c.state == pb.Certificate.KEEPING
    assert c.kept_rows == len(y) and c.kept == n
    counts = np.full(len(y), float(passes))
    counts[:50] += 3
    return c, counts


def test_two_hundred_passes_are_exact_over_the_distinct_rows(client):
    data = load_breast_cancer()
    X, y = data.data, np.where(data.target == 1, 1, -1)
    model = client.create_model("cyclic", dimension=X.shape[1])
    c, counts = learn_cyclically(model, X, y, PASSES)
    # x^: the bias 1 appended, then normalized (R = 1), as the model prepares it.
    Xb = np.hstack([X, np.ones((len(y), 1))])
    Xb /= np.linalg.norm(Xb, axis=1)[:, None]
    r2 = model.status().stats.radius ** 2
    assert r2 == 1.0
    primal, dual = weighted_svm(Xb, y.astype(float), 1 / r2, counts)
    assert abs(primal - dual) <= 1e-6 * primal
    upper, lower = c.upper / (2 * r2), c.lower / (2 * r2)
    # L <= P* <= U and (U - L) <= 1e-3 U: U and L within 1e-3 of cvxopt's optimum.
    assert lower <= primal * (1 + 1e-9)
    assert upper >= dual * (1 - 1e-9)
    assert abs(upper - primal) <= 1e-3 * upper
    assert c.upper >= model.status().stats.updates


def weighted_kernel_svm_dual(K, y, C, weights):
    """D* = max sum alpha - 1/2 alpha' Q alpha over 0 <= alpha_t <= C weight_t (Q_ts = y_t y_s
    K_ts): the same P* as weighted_svm's in the kernel's feature space, by cvxopt's QP on the
    dual; (low, high) around it from the QP's primal and dual objectives."""
    n = len(y)
    Q = (y[:, None] * y[None, :]) * K
    G = np.vstack([-np.eye(n), np.eye(n)])
    h = np.concatenate([np.zeros(n), C * weights])
    solvers.options.update(show_progress=False, abstol=1e-10, reltol=1e-10, feastol=1e-10,
                           maxiters=200)
    r = solvers.qp(matrix(Q), matrix(-np.ones(n)), matrix(G), matrix(h))
    assert r["status"] == "optimal", r["status"]
    return -r["primal objective"], -r["dual objective"]


def test_a_kernel_models_passes_are_exact_over_the_distinct_rows(client):
    """A kernel model counts repeated rows as a linear one does: 20 passes (some rows more
    often) keep 569 rows, and its certificate is the weighted kernel SVM's optimum."""
    data = load_breast_cancer()
    X, y = data.data, np.where(data.target == 1, 1, -1)
    model = client.create_model("cyclic-rbf", dimension=X.shape[1], algorithm="kernel",
                                kernel="rbf", sigma=1.0)
    c, counts = learn_cyclically(model, X, y, 20)
    Xb = np.hstack([X, np.ones((len(y), 1))])
    Xb /= np.linalg.norm(Xb, axis=1)[:, None]
    sq = (Xb * Xb).sum(axis=1)
    K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * Xb @ Xb.T, 0) / 2)  # sigma 1
    r2 = 1.0  # k(x^, x^) = 1 for rbf
    low, high = weighted_kernel_svm_dual(K, y.astype(float), 1 / r2, counts)
    assert high - low <= 1e-6 * high
    upper, lower = c.upper / (2 * r2), c.lower / (2 * r2)
    assert lower <= high * (1 + 1e-9)
    assert upper >= low * (1 - 1e-9)
    assert abs(upper - low) <= 1e-3 * upper
    assert c.upper >= model.status().stats.updates
