"""A scikit-learn classifier backed by perceptrond models, for pipelines, cross-validation and
grid search.

    from perceptrond.sklearn import PerceptronClassifier
    clf = PerceptronClassifier(address="127.0.0.1:50051")
    cross_val_score(make_pipeline(StandardScaler(), clf), X, y)

Each fitted estimator owns models on the server: one for two classes; for more, one multiclass
model (docs/design.md section 2.8: one weight vector a class, its bound and confusion matrix on
the server), named `model_id_`, whose classes are named as labels name them (strings as they
are, 3.0 as "3"), so that the server's status, confusion matrix and page say "setosa" where
classes_ does ("0", "1", ... for the positions of classes_ where those names are not distinct or
too long); the margin and kernel rules, which have no multiclass form, take one model per class
(one against the rest, "<model_id_>-<k>"). fit starts them anew (deleting the estimator's earlier
ones); partial_fit goes on learning; delete_models() removes them, and the server deletes them by
itself once they have learned nothing for `idle_expiry` seconds (an hour by default: the clones
that cross-validation fits go away; idle_expiry=None keeps them, and model_id names them). The
estimator pickles without its connection: unpickled, it talks to the same models.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .client import Client, Model, PerceptronError
from ._inputs import _batch_rows, _class_key, _frame_keys, _is_frame, _numeric_frame


# hash_bits for dicts by name when none is given: Vowpal Wabbit's default.
_HASH_BITS = 18


def _named_rows(X, by_name: bool):
    """X as rows by name, or None for an array: a list of dicts (DictVectorizer's input) as a
    list; a pandas DataFrame with a column that is not numbers (or any DataFrame when
    `by_name`, the models taking names) as it is, which the models read by its columns' names
    as the command-line client reads such a CSV file (a string or a category categorical, a
    missing cell no feature) and send as columns by name."""
    if isinstance(X, (list, tuple)) and len(X) > 0 and isinstance(X[0], Mapping):
        return list(X)
    if _is_frame(X) and (by_name or not _numeric_frame(X)):
        _frame_keys(X)  # two columns of one name: refused here, before any model is made
        return X
    return None


class PerceptronClassifier(ClassifierMixin, BaseEstimator):
    """Parameters mirror perceptrond's model configuration (docs/design.md); None takes the
    server's default. fit makes up to `max_iter` passes over the data (in a new random order
    each with `shuffle`, seeded by `random_state`), stopping after a pass with no update;
    partial_fit makes one; `max_epochs`, the earlier name of max_iter, wins if given. After
    fit, `n_iter_` is the passes it made, `mistakes_` and `updates_` count them over every
    model, and status() gives each model's figures on the server (its bound, its
    certificate). X may also be a list of dicts by name (as DictVectorizer takes them; a string
    value is categorical) or a pandas DataFrame with a column that is not numbers (read by its
    columns' names, a string or a category categorical, a missing cell no feature): fit (or a
    first partial_fit) then creates models with `hash_bits` that hash the names on the server,
    and partial_fit and predict take such input too (any DataFrame, by its names). hash_bits
    None is 18, Vowpal Wabbit's default, for a binary model and for one multiclass model alike
    (a wide model's certificate works over the coordinates its rows use: docs/design.md
    sections 2.8 and 2.9)."""

    def __init__(self, address: str = "127.0.0.1:50051", algorithm: str = "classic",
                 eta: Optional[float] = None, bias: Optional[bool] = None,
                 normalize: Optional[bool] = None, gamma: Optional[float] = None,
                 max_iter: int = 100, batch_size: Optional[int] = None,
                 token: Optional[str] = None,
                 model_id: Optional[str] = None, hash_bits: Optional[int] = None,
                 shuffle: bool = False,
                 random_state: Optional[int] = None,
                 idle_expiry: Optional[float] = 3600.0, max_epochs: Optional[int] = None):
        self.address = address
        self.algorithm = algorithm
        self.eta = eta
        self.bias = bias
        self.normalize = normalize
        self.gamma = gamma
        self.max_iter = max_iter
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.idle_expiry = idle_expiry
        self.batch_size = batch_size
        self.token = token
        self.model_id = model_id
        self.hash_bits = hash_bits

    # The connection is not state: it is made when needed and left out of pickles.
    def _client(self) -> Client:
        if getattr(self, "_connection", None) is None:
            self._connection = Client(self.address, token=self.token)
        return self._connection

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_connection", None)
        return state

    def _multiclass(self) -> bool:
        """Whether the classes go to one multiclass model (more than two, and a rule that has
        a multiclass form)."""
        return len(self.classes_) > 2 and self.algorithm in ("classic", "averaged", "voted")

    def _models(self) -> list:
        ids = ([self.model_id_] if len(self.classes_) == 2 or self._multiclass() else
               [f"{self.model_id_}-{k}" for k in range(len(self.classes_))])
        return [Model(self._client(), i) for i in ids]

    def _hash_bits(self) -> int:
        """The models' hash_bits for dicts by name: the parameter, or its default."""
        if self.hash_bits is not None:
            return self.hash_bits
        return _HASH_BITS

    def _start(self, n_features: Optional[int]) -> None:
        """New server models for classes_ (replacing this estimator's earlier ones); by name
        (hash_bits) when n_features is None."""
        if getattr(self, "model_id_", None) is not None:
            self.delete_models()
        self.model_id_ = self.model_id or f"sklearn-{uuid.uuid4().hex[:16]}"
        if n_features is not None:
            self.n_features_in_ = n_features
        else:  # by name: no number of features (nor an earlier fit's)
            self.__dict__.pop("n_features_in_", None)
            self.__dict__.pop("feature_names_in_", None)
        for m in self._models():
            self._client().create_model(
                m.id, n_features or 0, self.algorithm, eta=self.eta, bias=self.bias,
                normalize=self.normalize, gamma=self.gamma,
                hash_bits=self._hash_bits() if n_features is None else None,
                classes=self._class_names() if self._multiclass() else None,
                idle_expiry=self.idle_expiry)

    def _class_names(self) -> list:
        """The multiclass model's class names: classes_ written as a label names a class
        (strings as they are, 3.0 as "3") where those are distinct names of 1 to 256 bytes,
        else their positions "0", "1", ..."""
        positions = [str(k) for k in range(len(self.classes_))]
        try:
            names = [_class_key(c) for c in self.classes_]
        except ValueError:  # booleans name no class
            return positions
        if len(set(names)) == len(names) and all(0 < len(n.encode()) <= 256 for n in names):
            return names
        return positions

    def _server_classes(self, models: list) -> Optional[np.ndarray]:
        """The multiclass model's class names as the server has them, position by position
        in classes_ (as it was created, so also by an estimator pickled before names): one
        GetModel, which the Model keeps. None for binary models."""
        if not self._multiclass():
            return None
        return np.asarray(models[0].classes, dtype=object)

    def _targets(self, y: np.ndarray, names: Optional[np.ndarray]) -> list:
        """Per model, y as its labels: the multiclass model's name of each class (`names`,
        from _server_classes), or -1/+1, the second class against the first or each against
        the rest."""
        if names is not None:
            return [names[np.searchsorted(self.classes_, y)]]
        if len(self.classes_) == 2:
            return [np.where(y == self.classes_[1], 1, -1)]
        return [np.where(y == c, 1, -1) for c in self.classes_]

    def _max_passes(self) -> int:
        return self.max_epochs if self.max_epochs is not None else self.max_iter

    def _passes(self, x, y, passes: int) -> None:
        """Up to `passes` passes over (x, y), each model on one Learn stream, stopping after a
        pass that changed no model; with shuffle, each pass in a new random order."""
        models = self._models()
        names = self._server_classes(models)
        streams = [m.stream() for m in models]
        rng = np.random.default_rng(self.random_state) if self.shuffle else None
        mistakes = updates = made = 0
        try:
            for _ in range(passes):
                made += 1
                xs, ys = x, y
                if rng is not None:
                    order = rng.permutation(len(y))
                    if isinstance(x, list):
                        xs = [x[i] for i in order]
                    else:  # an array, or a DataFrame by name
                        xs = x.iloc[order] if _is_frame(x) else x[order]
                    ys = y[order]
                changed = False
                for s, target in zip(streams, self._targets(ys, names)):
                    result = s.learn(xs, target, batch_size=self.batch_size)
                    if result.errors:
                        raise result.errors[0][1]
                    changed |= bool(result.updates.any())
                    mistakes += int(result.mistakes.sum())
                    updates += int(result.updates.sum())
                if not changed:
                    break
        finally:
            for s in streams:
                s.close()
        self.mistakes_, self.updates_, self.n_iter_ = mistakes, updates, made

    def status(self) -> list:
        """The server's status (ModelStatus) of each of this estimator's models: counters,
        TD_gamma, the bound, the certificate, a multiclass model's confusion matrix."""
        check_is_fitted(self, "model_id_")
        return [m.status() for m in self._models()]

    def _by_name(self) -> bool:
        """Whether the fitted models take features by name (hash_bits)."""
        return hasattr(self, "model_id_") and not hasattr(self, "n_features_in_")

    def fit(self, X, y):
        rows = _named_rows(X, False)
        if rows is not None:
            return self._fit_dicts(rows, y)
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"a classifier needs samples of at least 2 classes; got the "
                             f"one class {classes[0]!r}" if len(classes) else
                             "a classifier needs samples of at least 2 classes")
        self.classes_ = classes
        self._start(X.shape[1])
        self._passes(X, y, self._max_passes())
        return self

    def _fit_dicts(self, X, y):
        """fit on a list of dicts by name, as DictVectorizer takes them: the server hashes the
        names into 2^hash_bits coordinates (docs/design.md section 2.9)."""
        y = np.asarray(y)
        if len(X) != len(y):
            raise ValueError(f"{len(X)} examples and {len(y)} labels")
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError("a classifier needs samples of at least 2 classes")
        self.classes_ = classes
        self._start(None)
        self._passes(X, y, self._max_passes())
        return self

    def partial_fit(self, X, y, classes=None):
        first = not hasattr(self, "classes_")
        rows = _named_rows(X, not first and self._by_name())
        if rows is not None:  # by name, as fit takes it
            y = np.asarray(y)
            if len(rows) != len(y):
                raise ValueError(f"{len(rows)} examples and {len(y)} labels")
            X = rows
        else:
            X, y = self._validate_data(X, y, accept_sparse="csr", dtype=np.float64,
                                       reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be given to the first partial_fit")
            classes = np.unique(classes)
            if len(classes) < 2:
                raise ValueError("a classifier needs at least 2 classes")
            self.classes_ = classes
            self._start(None if rows is not None else X.shape[1])
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if len(unknown):
            raise ValueError(f"labels {unknown.tolist()} are not in classes {self.classes_}")
        self._passes(X, y, 1)
        return self

    def decision_function(self, X) -> np.ndarray:
        """The score of each row: shape (n,) for two classes (positive: classes_[1]), else
        (n, classes): each class's score in the multiclass model (or against the rest)."""
        check_is_fitted(self, "model_id_")
        named = _named_rows(X, self._by_name())
        if named is not None:
            rows = _batch_rows(self.batch_size)
            scores = [np.concatenate([m.decision_function(named[s:s + rows])
                                      for s in range(0, len(named), rows)])
                      for m in self._models()]
            return scores[0] if len(scores) == 1 else np.stack(scores, axis=1)
        X = self._validate_data(X, accept_sparse="csr", dtype=np.float64, reset=False)
        empty = np.zeros((0, len(self.classes_)) if self._multiclass() else 0)
        rows = _batch_rows(self.batch_size, "sparse" if hasattr(X, "tocsr") else "dense", X)
        scores = [np.concatenate([m.decision_function(X[s:s + rows])
                                  for s in range(0, X.shape[0], rows)])
                  if X.shape[0] else empty for m in self._models()]
        return scores[0] if len(scores) == 1 else np.stack(scores, axis=1)

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores >= 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def delete_models(self) -> None:
        """Removes this estimator's models from the server."""
        for m in self._models():
            try:
                m.delete()
            except PerceptronError:
                pass

    def _more_tags(self):
        return {"non_deterministic": False, "requires_y": True}
