"""The multiclass certificate's peers (docs/design.md section 2.8), run by multiclass_certificate_test.

  multiclass_peers.py digits OUT   writes scikit-learn's digits (Debian's python3-sklearn) to OUT as
                                   lines "y x_1 ... x_64", y the class 0..9
  multiclass_peers.py solve IN     reads blocks "set KEY N W K C CVXOPT" followed by N lines
                                   "y x^_1 ... x^_W" (y a class 0..K-1, x^ the prepared example)

For each set, `solve` prints "set KEY LIBLINEAR LIBLINEAR_DUAL CVX_PRIMAL CVX_DUAL": LIBLINEAR is the
Crammer-Singer primal (1/2)||V||_F^2 + C sum_t max(0, max_{r != y_t} 1 - (v_y - v_r) . x^_t)
evaluated here at the V that Debian's liblinear-train -s 4 -B -1 -c C -e 1e-8 finds, LIBLINEAR_DUAL
the dual objective it reports (to six decimals; its solver can stall short of the optimum, and the
two then differ by more than its tolerance); CVX_PRIMAL and CVX_DUAL are
cvxopt's objectives for the same primal written as a QP (one constraint per example and other
class), or "none none" when CVXOPT is 0 or cvxopt did not reach an optimal status. Floats as repr.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def primal(V, X, y, C):
    S = X @ V.T  # n x k scores
    n = len(y)
    sy = S[np.arange(n), y]
    other = S.copy()
    other[np.arange(n), y] = -np.inf
    xi = np.maximum(0.0, 1.0 - (sy - other.max(axis=1)))
    return 0.5 * float(np.sum(V * V)) + C * float(xi.sum())


def liblinear(X, y, k, C):
    n, w = X.shape
    with tempfile.TemporaryDirectory() as d:
        data, model = os.path.join(d, "data.svm"), os.path.join(d, "model")
        with open(data, "w") as f:
            for t in range(n):
                # Every coordinate written, zeros too, so that nr_feature is w.
                f.write("%d %s\n" % (y[t], " ".join("%d:%r" % (i + 1, float(X[t, i]))
                                                   for i in range(w))))
        run = subprocess.run(["liblinear-train", "-s", "4", "-B", "-1", "-c", repr(C), "-e",
                              "1e-8", data, model], check=True, capture_output=True, text=True)
        with open(model) as f:
            lines = f.read().split("\n")
    labels = [int(v) for v in next(l for l in lines if l.startswith("label ")).split()[1:]]
    at = lines.index("w") + 1
    Wt = np.array([[float(v) for v in lines[at + i].split()] for i in range(w)])
    if Wt.ndim == 1:  # one column
        Wt = Wt[:, None]
    V = np.zeros((k, w))
    for j, label in enumerate(labels):
        V[label] = Wt[:, j]
    # It prints its dual objective in its minimising form, -D(alpha), to six decimals.
    dual = -float(next(l for l in run.stdout.split("\n")
                       if l.startswith("Objective value")).split("=")[1])
    return primal(V, X, y, C), dual


def cvx(X, y, k, C):
    from cvxopt import matrix, solvers
    solvers.options["show_progress"] = False
    solvers.options["maxiters"] = 200
    n, w = X.shape
    nv = k * w
    # Variables [V (k blocks of w), xi (n)].
    P = np.zeros((nv + n, nv + n))
    P[:nv, :nv] = np.eye(nv)
    q = np.concatenate([np.zeros(nv), C * np.ones(n)])
    rows, h = [], []
    for t in range(n):
        for r in range(k):
            if r == y[t]:
                continue
            # -(v_y - v_r) . x_t - xi_t <= -1
            g = np.zeros(nv + n)
            g[y[t] * w:(y[t] + 1) * w] = -X[t]
            g[r * w:(r + 1) * w] = X[t]
            g[nv + t] = -1
            rows.append(g)
            h.append(-1.0)
        g = np.zeros(nv + n)
        g[nv + t] = -1
        rows.append(g)
        h.append(0.0)
    for tol in (1e-11, 1e-10, 1e-9, 1e-8):
        solvers.options["abstol"] = solvers.options["reltol"] = tol
        solvers.options["feastol"] = max(tol, 1e-10)
        try:
            r = solvers.qp(matrix(P), matrix(q), matrix(np.array(rows)), matrix(np.array(h)))
        except (ValueError, ArithmeticError):
            continue
        if r["status"] == "optimal":
            return r["primal objective"], r["dual objective"]
    return None


def main():
    if sys.argv[1] == "digits":
        from sklearn.datasets import load_digits
        d = load_digits()
        with open(sys.argv[2], "w") as f:
            for x, label in zip(d.data, d.target):
                f.write("%d %s\n" % (label, " ".join(repr(float(v)) for v in x)))
        return
    with open(sys.argv[2]) as f:
        lines = f.read().split("\n")
    at = 0
    while at < len(lines) and lines[at].strip():
        _, key, n, w, k, C, want_cvx = lines[at].split()
        n, w, k, C = int(n), int(w), int(k), float(C)
        block = np.array([[float(v) for v in l.split()] for l in lines[at + 1:at + 1 + n]])
        at += 1 + n
        y, X = block[:, 0].astype(int), block[:, 1:]
        lib = liblinear(X, y, k, C)
        c = cvx(X, y, k, C) if want_cvx == "1" else None
        print("set %s %r %r %s" % (key, lib[0], lib[1], "none none" if c is None else "%r %r" % c))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
