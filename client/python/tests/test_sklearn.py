"""The scikit-learn estimator against real perceptrond processes."""
import os
import pickle
import subprocess
import time
import warnings

import numpy as np
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import perceptrond
from perceptrond.sklearn import PerceptronClassifier
from perceptrond_process import Perceptrond
from test_client import CSV, bits


def breast_cancer():
    data = np.loadtxt(CSV, delimiter=",", skiprows=1)
    return np.ascontiguousarray(data[:, :-1]), data[:, -1]


def test_fit_equals_the_cpp_clis_fit(server, client):
    """fit's passes are the server's Train passes as the C++ CLI's `fit` makes them: the same
    model bit for bit, so the same predictions."""
    x, y = breast_cancer()
    clf = PerceptronClassifier(address=server.target, normalize=False, max_epochs=50).fit(x, y)
    run = subprocess.run([os.environ["PERCEPTRON_CLI"], "fit", CSV, "--model=cpp", "--create",
                          "--nonormalize", "--max_epochs=50", "--server=" + server.target],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "50 passes, not separated" in run.stdout
    cpp = client.model("cpp")
    assert np.array_equal(bits(client.model(clf.model_id_).weights()), bits(cpp.weights()))
    assert np.array_equal(bits(clf.decision_function(x)), bits(cpp.decision_function(x)))
    assert np.array_equal(clf.predict(x), np.where(cpp.decision_function(x) >= 0, 1.0, 0.0))
    assert list(clf.classes_) == [0.0, 1.0]


def test_pipelines_partial_fit_and_pickles(server, client):
    x, y = breast_cancer()
    clf = PerceptronClassifier(address=server.target)
    scores = cross_val_score(make_pipeline(StandardScaler(), clf), x, y, cv=3)
    assert scores.mean() > 0.9, scores
    # partial_fit in pieces is one pass, as learning the whole at once.
    online = PerceptronClassifier(address=server.target, normalize=False)
    for s in range(0, len(y), 100):
        online.partial_fit(x[s:s + 100], y[s:s + 100], classes=[0, 1])
    whole = client.create_model("whole", dimension=30, normalize=False)
    whole.learn(x, np.where(y == 1, 1, -1))
    assert np.array_equal(bits(client.model(online.model_id_).weights()), bits(whole.weights()))
    # Pickled without its connection; unpickled, the same models answer.
    copy = pickle.loads(pickle.dumps(online))
    assert np.array_equal(copy.predict(x), online.predict(x))
    # Three classes: one multiclass model, its classes named as classes_ are written.
    three = np.where(x[:, 0] > np.median(x[:, 0]), 2, y)
    multi = PerceptronClassifier(address=server.target, max_iter=3).fit(x, three)
    assert multi.decision_function(x).shape == (len(y), 3)
    model = client.model(multi.model_id_)
    assert model.classes == ["0", "1", "2"]
    status = model.status()
    assert sum(status.confusion) == status.stats.examples > 0
    labels = np.array(model.predict(x)).astype(int)
    assert np.array_equal(multi.predict(x), multi.classes_[labels])
    words = np.array(["benign", "malignant", "wide"])[three.astype(int)]
    named = PerceptronClassifier(address=server.target, max_iter=3).fit(x, words)
    model = client.model(named.model_id_)
    assert model.classes == ["benign", "malignant", "wide"]
    assert np.array_equal(named.predict(x), np.array(model.predict(x), dtype=object))
    assert list(model.status().confusion) == list(status.confusion)
    # Texts that are no class name (over 256 bytes): the positions instead.
    long = np.array(["a" * 300, "b" * 300, "c"])[three.astype(int)]
    positions = PerceptronClassifier(address=server.target, max_iter=3).fit(x, long)
    assert client.model(positions.model_id_).classes == ["0", "1", "2"]
    assert positions.score(x, long) == multi.score(x, three)
    # The margin rule has no multiclass form: one model per class against the rest.
    ovr = PerceptronClassifier(address=server.target, algorithm="margin", gamma=0.1,
                               max_epochs=2).fit(x, three)
    assert ovr.decision_function(x).shape == (len(y), 3)
    ids = {m.model_id for m in client.list_models()}
    assert multi.model_id_ in ids and multi.model_id_ + "-0" not in ids
    assert {ovr.model_id_ + "-0", ovr.model_id_ + "-2"} <= ids
    for estimator in (multi, named, positions, ovr):
        estimator.delete_models()
        assert not any(i.startswith(estimator.model_id_) for i in
                       (m.model_id for m in client.list_models()))


def started(server, method: str) -> int:
    """The server's count of `method` calls started, from /metrics."""
    status, _, body = server.get("/metrics")
    assert status == 200
    prefix = f'grpc_server_started_total{{grpc_method="{method}",'
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in body.splitlines()
               if line.startswith(prefix))


def test_a_multiclass_fit_reads_the_models_classes_once(server):
    """Every pass of a multiclass fit sends labels by the model's class names; they are read
    from the server (one GetModel) once a fit, not once a pass."""
    x, y = breast_cancer()
    three = np.where(x[:, 0] > np.median(x[:, 0]), 2, y)
    before = started(server, "GetModel")
    clf = PerceptronClassifier(address=server.target, max_iter=6).fit(x, three)
    assert clf.n_iter_ == 6  # not separable: every pass made
    assert started(server, "GetModel") - before == 1
    before = started(server, "GetModel")
    clf.partial_fit(x[:50], three[:50])
    assert started(server, "GetModel") - before == 1


def test_check_estimator(server):
    """scikit-learn's own estimator checks: every one passes (pandas is installed, so none is
    skipped for want of it)."""
    passed, skipped, failed = [], [], []
    for estimator, check in check_estimator(PerceptronClassifier(address=server.target),
                                            generate_only=True):
        name = getattr(check, "func", check).__name__
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(estimator)
            passed.append(name)
        except Exception as e:  # noqa: BLE001 - a check's failure, recorded
            if type(e).__name__ == "SkipTest":
                skipped.append(f"{name}: {e}")
            else:
                failed.append(f"{name}: {type(e).__name__}: {e}")
    print(f"check_estimator: {len(passed)} passed, {len(skipped)} skipped: {skipped}")
    assert failed == [] and skipped == []
    assert len(passed) >= 43


def test_models_made_for_a_while_go_and_fit_reports_its_counts():
    """Cross-validation's clones leave no models behind: the server deletes each once it has
    learned nothing for idle_expiry seconds; idle_expiry=None keeps one. fit counts its
    mistakes and updates; shuffle with a seed passes in a random order, the same each time."""
    server = Perceptrond(os.environ["PERCEPTROND"], "--durability=none", "--expiry_interval=0.05s")
    try:
        x, y = breast_cancer()
        with perceptrond.Client(server.target) as client:
            short = PerceptronClassifier(address=server.target, idle_expiry=0.5)
            kept = PerceptronClassifier(address=server.target, idle_expiry=None).fit(x, y)
            cross_val_score(make_pipeline(StandardScaler(), short), x, y, cv=3)
            end = time.monotonic() + 60
            while {m.model_id for m in client.list_models()} != {kept.model_id_}:
                assert time.monotonic() < end, [m.model_id for m in client.list_models()]
                time.sleep(0.05)  # a poll's pause
            assert client.model(kept.model_id_).info().config.idle_expiry_seconds == 0
            # One pass: its counts are the model's.
            once = PerceptronClassifier(address=server.target, max_iter=1, idle_expiry=None)
            once.fit(x, y)
            stats = once.status()[0].stats
            assert (once.mistakes_, once.updates_) == (stats.mistakes, stats.updates)
            assert once.mistakes_ > 0
            # Shuffled passes: the same order for the same seed, another without one.
            a = PerceptronClassifier(address=server.target, max_iter=3, shuffle=True,
                                     random_state=7, idle_expiry=None).fit(x, y)
            b = PerceptronClassifier(address=server.target, max_iter=3, shuffle=True,
                                     random_state=7, idle_expiry=None).fit(x, y)
            plain = PerceptronClassifier(address=server.target, max_iter=3,
                                         idle_expiry=None).fit(x, y)
            assert np.array_equal(bits(a.decision_function(x)), bits(b.decision_function(x)))
            assert not np.array_equal(bits(a.decision_function(x)),
                                      bits(plain.decision_function(x)))
            # max_epochs, the earlier name, still counts passes.
            old = PerceptronClassifier(address=server.target, max_epochs=1, idle_expiry=None)
            assert old.fit(x, y).mistakes_ == once.mistakes_
    finally:
        assert server.stop() == 0
