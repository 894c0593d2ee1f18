"""Fits scikit-learn's Perceptron for one pass over breast_cancer.csv, as docs/design.md section 2, 6 states,
and prints the data file's path and the fitted weights for sklearn_peer_test to compare.

Output lines: "csv PATH", "samples N", "coef V V ...", "intercept V" (floats as repr, exact).
"""
import os
import warnings

import sklearn
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import Perceptron

warnings.simplefilter("ignore")  # max_iter=1 warns that it did not converge; that is the point.

X, y = load_breast_cancer(return_X_y=True)
model = Perceptron(eta0=1, penalty=None, fit_intercept=True, shuffle=False, max_iter=1, tol=None)
model.fit(X, y)
assert list(model.classes_) == [0, 1]
print("csv", os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "breast_cancer.csv"))
print("samples", X.shape[0])
print("coef", " ".join(repr(float(v)) for v in model.coef_[0]))
print("intercept", repr(float(model.intercept_[0])))
