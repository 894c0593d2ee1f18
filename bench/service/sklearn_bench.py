"""scikit-learn's Perceptron on the benchmark's data (docs/design.md section 7): one epoch (the
median of REPEATS), and partial_fit one example at a time. Reads the files service_bench writes;
prints "NAME epoch EX_PER_S" and "NAME partial_fit EX_PER_S" lines.

    /usr/bin/python3 sklearn_bench.py DIR REPEATS W1 W2 W3
"""
import sys
import time
import warnings

import numpy as np
import scipy.sparse
from sklearn.linear_model import Perceptron

warnings.simplefilter("ignore")


def load(directory, name):
    meta = open(f"{directory}/{name}.meta").read().split()
    n, d, nnz = int(meta[0]), int(meta[1]), int(meta[2])
    y = np.fromfile(f"{directory}/{name}.y", dtype=np.float64)
    if nnz == 0:
        x = np.fromfile(f"{directory}/{name}.x", dtype=np.float64).reshape(n, d)
    else:
        values = np.fromfile(f"{directory}/{name}.x", dtype=np.float64)
        indices = np.fromfile(f"{directory}/{name}.i", dtype=np.int32)
        indptr = np.arange(0, n * nnz + 1, nnz, dtype=np.int64)
        x = scipy.sparse.csr_matrix((values, indices, indptr), shape=(n, d))
    return x, y


def main():
    directory, repeats = sys.argv[1], int(sys.argv[2])
    for name in sys.argv[3:]:
        x, y = load(directory, name)
        n = x.shape[0]

        def epoch():
            p = Perceptron(eta0=1, penalty=None, fit_intercept=True, shuffle=False, max_iter=1,
                           tol=None)
            t = time.perf_counter()
            p.fit(x, y)
            return time.perf_counter() - t

        seconds = sorted(epoch() for _ in range(repeats))[repeats // 2]
        print(f"{name} epoch {n / seconds:.1f}", flush=True)

        m = min(n, 2000)
        p = Perceptron(eta0=1, penalty=None, fit_intercept=True, shuffle=False)
        classes = np.unique(y)  # -1/+1, or W6's classes
        t = time.perf_counter()
        for i in range(m):
            p.partial_fit(x[i:i + 1], y[i:i + 1], classes=classes)
        print(f"{name} partial_fit {m / (time.perf_counter() - t):.1f}", flush=True)


if __name__ == "__main__":
    main()
