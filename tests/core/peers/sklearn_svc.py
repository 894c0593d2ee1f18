"""The certificate's peer (docs/design.md section 2.7): scikit-learn's LinearSVC (liblinear, hinge loss,
no intercept) on breast_cancer.csv prepared as a model with bias c = 1 prepares it, normalized or not, with
C = 1/R^2. Prints, per preparation, R and liblinear's primal objective
P(coef) = 1/2 ||coef||^2 + C sum_t max(0, 1 - y_t coef . x^_t) at its solution, for certificate_peer_test.

Output lines: "csv PATH", then "objective NORMALIZE R P" for NORMALIZE in 1, 0 (floats as repr).

With arguments "rows FILE W", the same for prepared examples written by the test instead: FILE holds
float64 records (native byte order) of the label then x^'s W coordinates; prints "objective rows R P".
"""
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer
from sklearn.svm import LinearSVC

warnings.simplefilter("ignore")

if len(sys.argv) == 4 and sys.argv[1] == "rows":
    data = np.fromfile(sys.argv[2], dtype=np.float64).reshape(-1, int(sys.argv[3]) + 1)
    y = data[:, 0]
    Xb = data[:, 1:]
    R = float(np.max(np.linalg.norm(Xb, axis=1)))
    C = 1.0 / (R * R)
    svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=C, tol=1e-10, max_iter=10**7)
    svc.fit(Xb, y)
    w = svc.coef_[0]
    P = 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - y * (Xb @ w)).sum())
    print("objective rows", repr(R), repr(P))
    sys.exit(0)

X, y01 = load_breast_cancer(return_X_y=True)
y = np.where(y01 == 1, 1.0, -1.0)
print("csv", os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "breast_cancer.csv"))
for normalize in (1, 0):
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    if normalize:
        Xb = Xb / np.linalg.norm(Xb, axis=1, keepdims=True)
    R = float(np.max(np.linalg.norm(Xb, axis=1)))
    C = 1.0 / (R * R)
    svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=C, tol=1e-12, max_iter=10**7)
    svc.fit(Xb, y)
    w = svc.coef_[0]
    P = 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - y * (Xb @ w)).sum())
    print("objective", normalize, repr(R), repr(P))
