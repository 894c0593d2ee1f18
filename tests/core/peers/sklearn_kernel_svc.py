"""The kernel certificate's peer (docs/design.md section 2.7): scikit-learn's SVC (libsvm) for
kernel_certificate_test.

  sklearn_kernel_svc.py csv
      prints the path of scikit-learn's breast_cancer.csv.
  sklearn_kernel_svc.py solve ROWS KERNEL DEGREE C0 SIGMA
      ROWS has lines "y x^_1 ... x^_W" (prepared examples, the bias coordinate included); KERNEL is
      rbf, poly or linear. With K computed by sklearn.metrics.pairwise (rbf: gamma = 1/(2 sigma^2);
      poly: (x.x' + C0)^DEGREE), R^2 = max K_tt and C = 1/R^2, prints
        "r2 R2", "primal P", "dual D"
      where P is the objective 1/2 ||v||^2 + C sum_t max(0, 1 - y_t f(x^_t)) of SVC's solution and D
      its dual value. SVC fits an intercept b, which the certificate has not; on the doubled set
      {(x^_t, y_t), (-x^_t, -y_t)} in feature space (Gram matrix [[K, -K], [-K, K]], precomputed)
      the objective is symmetric in b, so its optimum has b = 0, and with C/2 it equals the
      certificate's P*(C) = min 1/2 ||v||^2 + C sum_t max(0, 1 - y_t v . phi(x^_t)). P includes
      SVC's own b (at most P* plus libsvm's tolerance away).
"""
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel
from sklearn.svm import SVC

warnings.simplefilter("ignore")


def gram(X, kernel, degree, c0, sigma):
    """The kernel's Gram matrix of the rows of X (rbf: gamma = 1/(2 sigma^2); poly: (x.x' + c0)^degree;
    else linear)."""
    if kernel == "rbf":
        return rbf_kernel(X, gamma=1.0 / (2.0 * float(sigma) ** 2))
    if kernel == "poly":
        return polynomial_kernel(X, degree=int(degree), gamma=1.0, coef0=float(c0))
    return linear_kernel(X)


def main():
    if sys.argv[1] == "csv":
        print(os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "breast_cancer.csv"))
        return

    _, _, rows, kernel, degree, c0, sigma = sys.argv
    data = np.loadtxt(rows, ndmin=2)
    y = data[:, 0]
    X = data[:, 1:]
    K = gram(X, kernel, degree, c0, sigma)
    r2 = float(np.max(np.diag(K)))
    C = 1.0 / r2
    K2 = np.block([[K, -K], [-K, K]])
    y2 = np.concatenate([y, -y])
    svc = SVC(kernel="precomputed", C=C / 2, tol=1e-10, max_iter=-1, cache_size=500)
    svc.fit(K2, y2)
    a = np.zeros(len(y2))
    a[svc.support_] = svc.dual_coef_[0]  # alpha_t y_t
    Ka = K2 @ a
    vv = float(a @ Ka)
    f = Ka + svc.intercept_[0]
    primal = 0.5 * vv + (C / 2) * float(np.maximum(0.0, 1.0 - y2 * f).sum())
    dual = float(np.abs(a).sum()) - 0.5 * vv
    print("r2", repr(r2))
    print("primal", repr(primal))
    print("dual", repr(dual))
    print("intercept", repr(float(svc.intercept_[0])))


if __name__ == "__main__":
    main()
