"""The certificate's independent solver (docs/design.md section 2.7): cvxopt's QP and cone solvers from
Debian (python3-cvxopt) on the prepared examples that certificate_cvxopt_test writes.

Input (argv[1]): blocks "stream K N W R GAMMA [KERNEL DEGREE C0 SIGMA]" followed by N lines
"y x^_1 ... x^_W". With a kernel (rbf, poly or linear, as sklearn_kernel_svc.py computes it with
sklearn.metrics.pairwise), the problems are posed in its feature space over the span of the
examples: the Gram matrix K = V diag(l) V^T (numpy's eigh) gives features Phi = V diag(sqrt(l))
with Phi Phi^T = K, and Phi's rows stand for the examples below (R is then the feature space's).
Output, per stream, with the solver's primal and dual objectives (floats as repr; "none" where cvxopt
did not reach an optimal status):
  "soft K PRIMAL DUAL"  min 1/2 ||v||^2 + C sum xi  s.t. y v.x^ >= 1 - xi, xi >= 0, C = 1/R^2
  "hard K GAMMA|none"   max margin 1/||v|| of min 1/2 ||v||^2 s.t. y v.x^ >= 1 (none: infeasible,
                        or not solved)
  "td K PRIMAL DUAL"    min sum xi  s.t. xi >= GAMMA - y u.x^, xi >= 0, ||u|| <= 1
"""
import sys

import numpy as np
from cvxopt import matrix, solvers
from sklearn_kernel_svc import gram  # beside this file

solvers.options["show_progress"] = False
solvers.options["maxiters"] = 200


def solve(run):
    """`run` at tight tolerances; near the optimum the interior-point scaling can leave the cone
    (a domain error), and then at the next looser ones."""
    for tol in (1e-11, 1e-10, 1e-9, 1e-8):
        solvers.options["abstol"] = solvers.options["reltol"] = tol
        solvers.options["feastol"] = max(tol, 1e-10)
        try:
            return run()
        except (ValueError, ArithmeticError):
            continue
    return None


def soft(X, y, C):
    n, w = X.shape
    # Variables [v (w), xi (n)].
    P = np.zeros((w + n, w + n))
    P[:w, :w] = np.eye(w)
    q = np.concatenate([np.zeros(w), C * np.ones(n)])
    # -y_t x_t . v - xi_t <= -1 ; -xi_t <= 0
    G = np.block([[-(y[:, None] * X), -np.eye(n)], [np.zeros((n, w)), -np.eye(n)]])
    h = np.concatenate([-np.ones(n), np.zeros(n)])
    r = solve(lambda: solvers.qp(matrix(P), matrix(q), matrix(G), matrix(h)))
    if r is None or r["status"] != "optimal":
        return None
    return r["primal objective"], r["dual objective"]


def hard(X, y):
    n, w = X.shape
    G = -(y[:, None] * X)
    h = -np.ones(n)
    r = solve(lambda: solvers.qp(matrix(np.eye(w)), matrix(np.zeros(w)), matrix(G), matrix(h)))
    if r is None or r["status"] != "optimal":
        return None
    v = np.array(r["x"]).ravel()
    return 1.0 / np.linalg.norm(v)


def td(X, y, gamma):
    n, w = X.shape
    # Variables [u (w), xi (n)]; minimise sum xi.
    c = np.concatenate([np.zeros(w), np.ones(n)])
    # Linear: -y_t u.x_t - xi_t <= -gamma ; -xi_t <= 0.
    Gl = np.block([[-(y[:, None] * X), -np.eye(n)], [np.zeros((n, w)), -np.eye(n)]])
    hl = np.concatenate([-gamma * np.ones(n), np.zeros(n)])
    # Second-order cone: (1, u) with ||u|| <= 1, written as s = h - G x in the cone.
    Gq = np.zeros((w + 1, w + n))
    Gq[1:, :w] = -np.eye(w)
    hq = np.zeros(w + 1)
    hq[0] = 1.0
    G = np.vstack([Gl, Gq])
    h = np.concatenate([hl, hq])
    dims = {"l": 2 * n, "q": [w + 1], "s": []}
    r = solve(lambda: solvers.conelp(matrix(c), matrix(G), matrix(h), dims))
    if r is None or r["status"] != "optimal":
        return None
    return r["primal objective"], r["dual objective"]


def features(X, kernel, degree, c0, sigma):
    """Rows Phi with Phi Phi^T = K, the kernel's Gram matrix of X."""
    K = gram(X, kernel, degree, c0, sigma)
    values, vectors = np.linalg.eigh((K + K.T) / 2)
    return vectors * np.sqrt(np.maximum(values, 0.0))


def main():
    lines = open(sys.argv[1]).read().split("\n")
    i = 0
    while i < len(lines):
        head = lines[i].split()
        i += 1
        if not head:
            continue
        _, k, n, w, radius, gamma = head[:6]
        n, w, radius, gamma = int(n), int(w), float(radius), float(gamma)
        rows = np.array([[float(v) for v in lines[i + t].split()] for t in range(n)])
        i += n
        y, X = rows[:, 0], rows[:, 1:]
        assert X.shape == (n, w)
        if len(head) > 6:
            X = features(X, *head[6:])
        r = soft(X, y, 1.0 / (radius * radius))
        print("soft", k, *(("none", "none") if r is None else map(repr, r)))
        g = hard(X, y)
        print("hard", k, "none" if g is None else repr(g))
        r = td(X, y, gamma)
        print("td", k, *(("none", "none") if r is None else map(repr, r)))
        sys.stdout.flush()


main()
