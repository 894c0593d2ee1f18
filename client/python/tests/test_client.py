"""The perceptrond package against real perceptrond processes."""
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

import grpc
import numpy as np
import pytest
import scipy.sparse

import perceptrond
from perceptrond import _wire
from perceptron.v1 import perceptron_pb2 as pb
from perceptrond_process import Perceptrond

CSV = os.environ.get("PERCEPTRON_BREAST_CANCER_CSV",
                     "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv")


def breast_cancer():
    data = np.loadtxt(CSV, delimiter=",", skiprows=1)
    return np.ascontiguousarray(data[:, :-1]), np.where(data[:, -1] == 1, 1, -1)


def bits(a):
    """Doubles as their bit patterns, to compare bit for bit."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def items_learn(client, model_id, x, y):
    """The per-item path: one LabeledExample per row, in batches of 64; the outcomes."""
    def requests():
        for start in range(0, x.shape[0], 64):
            r = pb.LearnRequest(model_id=model_id if start == 0 else "")
            for i in range(start, min(x.shape[0], start + 64)):
                item = r.items.add().labeled
                item.label = int(y[i])
                if scipy.sparse.issparse(x):
                    row = x.getrow(i)
                    item.features.sparse.indices.extend(row.indices.tolist())
                    item.features.sparse.values.extend(row.data.tolist())
                else:
                    item.features.dense.values.extend(x[i].tolist())
            yield r
    return [r for response in client._stub.Learn(requests()) for r in response.results]


def test_varints_are_protobufs_own():
    values = np.array([0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**28, 2**32 - 1, 2**35,
                       2**63 - 1, 2**63, 2**64 - 1] + list(range(0, 5000, 7)), dtype=np.uint64)
    labels = np.array([1, -1, 0, 5, -7, 2**31 - 1, -2**31])
    expected = pb.Columns(reveal_ids=values.tolist(), reveal_labels=labels.tolist())
    assert bytes(_wire.reveal_columns(values, labels)) == expected.SerializeToString()
    units = np.array([1, -1, -1, 1])
    assert _wire.unit_labels(units) == _wire.zigzag_labels(units)
    # Values of at most one, two and three bytes (encoded in as many groups as the largest
    # value needs).
    for top in (127, 16383, 2**21 - 1):
        small = np.array([0, 1, top, top // 2, 127] + list(range(0, top, top // 997 + 1)),
                         dtype=np.uint64)
        ones = np.ones(len(small), dtype=np.int64)
        expected = pb.Columns(reveal_ids=small.tolist(), reveal_labels=ones.tolist())
        assert bytes(_wire.reveal_columns(small, ones)) == expected.SerializeToString()
    columns = _wire.dense_columns(np.ones((2, 3)), np.array([1, -1]))
    assert bytes(columns) == pb.Columns(dense=[1.0] * 6, labels=[1, -1],
                                        dense_rows=2).SerializeToString()
    for model_id, if_examples in (("m", None), ("m", 0), ("", 2**40 + 3)):
        want = pb.LearnRequest(model_id=model_id, columns=pb.Columns.FromString(bytes(columns)))
        if if_examples is not None:
            want.if_examples = if_examples
        assert _wire.learn_request(model_id, columns, if_examples) == want.SerializeToString()


def test_column_answers_are_read_from_the_bytes_as_protobuf_reads_them():
    rng = np.random.default_rng(4)
    scores = np.concatenate([rng.standard_normal(300), [0.0, -0.0, np.inf, 1e-310]])
    n = len(scores)
    for labels in (rng.choice([-1, 1], n), rng.integers(0, 64, n), np.zeros(n, dtype=int),
                   rng.integers(-64, 0, n)):
        c = pb.ColumnResults(scores=scores.tolist(), labels=labels.tolist(), mistakes=b"\x05",
                             updates=b"\x01", first_prediction_id=2**40,
                             errors=[pb.ColumnError(item=3)])
        got_scores, got_labels = _wire.column_answers(c.SerializeToString())
        assert got_scores.tobytes() == np.array(c.scores).tobytes()
        assert got_labels.tolist() == list(c.labels)
        assert got_labels.dtype == np.int64
    # Labels of more than one byte each, a field written in two parts or unpacked: read
    # through the message (None here).
    wide = pb.ColumnResults(scores=[1.0, 2.0], labels=[64, -65])
    got_scores, got_labels = _wire.column_answers(wide.SerializeToString())
    assert got_scores.tolist() == [1.0, 2.0] and got_labels is None
    halves = (pb.ColumnResults(scores=[1.0]).SerializeToString()
              + pb.ColumnResults(scores=[2.0]).SerializeToString())
    assert list(pb.ColumnResults.FromString(halves).scores) == [1.0, 2.0]
    assert _wire.column_answers(halves)[0] is None
    unpacked = bytes([0x09]) + np.array([3.0]).tobytes()  # field 1, wire type 1: one double
    assert list(pb.ColumnResults.FromString(unpacked).scores) == [3.0]
    assert _wire.column_answers(unpacked) == (None, None)
    empty_scores, empty_labels = _wire.column_answers(b"")
    assert empty_scores.size == 0 and empty_labels.size == 0


def test_sparse_columns_are_protobufs_own():
    indptr = np.array([5, 7, 7, 10])  # rows of 2, 0 and 3 values, starting at offset 5
    indices = np.array([3, 2**20, 0, 2**32 - 1, 17])
    values = np.array([0.5, -1.0, 2.0, 1e-300, -0.0])
    expected = pb.Columns(row_ends=[2, 2, 5], fixed_indices=indices.tolist(),
                          values=values.tolist(), labels=[1, -1, 1])
    got = _wire.sparse_columns(indptr, indices, values, np.array([1, -1, 1]))
    assert bytes(got) == expected.SerializeToString()
    for bad in (np.array([-1]), np.array([2**32])):
        with pytest.raises(ValueError, match="below 2\\*\\*32"):
            _wire.sparse_columns(np.array([0, 1]), bad, np.array([1.0]), None)


def test_learn_dense_equals_the_cpp_clients_items(server, client):
    x, y = breast_cancer()
    model = client.create_model("py", dimension=30, normalize=False)
    result = model.learn(x, y)
    # The figures of the core library and scikit-learn (docs/design.md section 2).
    assert result.errors == []
    assert int(result.mistakes.sum()) == 168 == result.stats.mistakes
    assert int(result.updates.sum()) == 168 == result.stats.updates
    # The same file through the C++ client's per-item path: the same model, bit for bit.
    run = subprocess.run([os.environ["PERCEPTRON_CLI"], "train", CSV, "--model=cpp", "--create",
                          "--nonormalize", "--nocolumnar", "--progress=no",
                          "--server=" + server.target],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(0 as columns)" in run.stdout
    cpp = client.model("cpp")
    assert np.array_equal(bits(model.weights()), bits(cpp.weights()))
    assert np.array_equal(bits(model.decision_function(x)), bits(cpp.decision_function(x)))
    assert np.array_equal(model.predict(x), np.where(cpp.decision_function(x) >= 0, 1, -1))


def test_default_batches_hold_about_two_mib_of_values(client):
    from perceptrond._inputs import _batch_rows
    dense = lambda d: np.zeros((3, d))  # noqa: E731
    assert _batch_rows(None, "dense", dense(20)) == 8192  # 13,107 capped
    assert _batch_rows(None, "dense", dense(100)) == 2621
    assert _batch_rows(None, "dense", dense(1000)) == 262
    assert _batch_rows(None, "dense", dense(10 ** 6)) == 1
    assert _batch_rows(None, "dense", dense(0)) == 8192
    rows = scipy.sparse.random(10, 1000, density=0.032, format="csr", random_state=1)
    assert _batch_rows(None, "sparse", rows) == (2 << 20) // (12 * rows.nnz // 10)
    assert _batch_rows(None) == 1024  # dicts by name
    assert _batch_rows(7, "dense", dense(20)) == 7
    # Learned in the default batches (three of 8,192 rows and one of 3,616) or in 64-row ones:
    # the same model, bit for bit.
    rng = np.random.default_rng(11)
    x = rng.standard_normal((28192, 20))
    y = np.where(x @ rng.standard_normal(20) >= 0, 1, -1)
    a = client.create_model("default-batches", dimension=20)
    b = client.create_model("small-batches", dimension=20)
    ra, rb = a.learn(x, y), b.learn(x, y, batch_size=64)
    assert ra.stats.examples == rb.stats.examples == 28192
    assert np.array_equal(bits(ra.scores), bits(rb.scores))
    assert np.array_equal(ra.mistakes, rb.mistakes)
    assert np.array_equal(bits(a.weights()), bits(b.weights()))


def test_learn_sparse_equals_the_per_item_path(client):
    rng = np.random.default_rng(5)
    x = scipy.sparse.random(700, 60, density=0.1, format="csr", random_state=rng,
                            data_rvs=rng.standard_normal)
    y = np.where(rng.standard_normal(700) + x.sum(axis=1).A1 > 0, 1, -1)
    a = client.create_model("columns", dimension=60, algorithm="averaged")
    b = client.create_model("items", dimension=60, algorithm="averaged")
    result = a.learn(x, y, batch_size=100)
    outcomes = items_learn(client, "items", x, y)
    assert len(outcomes) == 700
    assert np.array_equal(bits(result.scores), bits([o.outcome.score for o in outcomes]))
    assert np.array_equal(result.mistakes, [o.outcome.mistake for o in outcomes])
    assert np.array_equal(result.updates, [o.outcome.updated for o in outcomes])
    assert np.array_equal(bits(a.weights()), bits(b.weights()))
    assert result.stats.examples == 700


def test_bad_input_is_refused_and_changes_nothing(client):
    model = client.create_model("m", dimension=3)
    with pytest.raises(perceptrond.PerceptronError) as e:
        client.model("missing").learn(np.ones((2, 3)), [1, -1])
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "missing" in e.value.message
    with pytest.raises(ValueError, match=r"label 2 \(example 1\) is not \+1/1 or -1/0"):
        model.learn(np.ones((2, 3)), [1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning before the answer
        with pytest.raises(ValueError, match=r"label 'cat' \(example 0\).*classes="):
            model.learn(np.ones((2, 3)), np.array(["cat", "dog"]))
    with pytest.raises(ValueError, match="3 labels for 2"):
        model.learn(np.ones((2, 3)), [1, -1, 1])
    # An option no field can hold is named (protobuf says only "Value out of range").
    with pytest.raises(ValueError, match="dimension -3: "):
        client.create_model("neg", dimension=-3)
    with pytest.raises(ValueError, match="degree 'two': "):
        client.create_model("neg", dimension=3, algorithm="kernel", kernel="polynomial",
                            degree="two")
    # A whole array of the wrong width is refused here, in the caller's terms: nothing learned.
    with pytest.raises(ValueError, match="the examples have 4 features; model 'm' has "
                                         "dimension 3"):
        model.learn(np.ones((2, 4)), [1, -1])
    with pytest.raises(ValueError, match="the examples have 2 features"):
        model.predict(np.ones((1, 2)))
    # Batches are encoded as the stream takes them; what the encoding would refuse is found
    # before anything is sent: an index the wire cannot carry, in the last batch.
    wide = scipy.sparse.csr_matrix((np.ones(3), np.array([0, 1, 2**33], dtype=np.int64),
                                    np.array([0, 1, 2, 3])), shape=(3, 2**34))
    with pytest.raises(ValueError, match="below 2\\*\\*32"):
        model.learn(wide, [1, -1, 1], batch_size=1)
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        model.learn(np.ones((2, 3)), [1, -1], batch_size=0)
    assert model.status().stats.examples == 0
    # A bad row is refused alone, named by its index; the others are learned.
    x = np.ones((5, 3))
    x[2, 1] = np.nan
    result = model.learn(x, [1, -1, 1, -1, 1])
    assert [i for i, _ in result.errors] == [2]
    index, error = result.errors[0]
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT and error.item == 2
    assert "NaN" in error.message or "nan" in error.message
    assert result.stats.examples == 4
    with pytest.raises(perceptrond.PerceptronError) as e:
        client.create_model("m", dimension=3)
    assert e.value.code == grpc.StatusCode.ALREADY_EXISTS
    # An id a header cannot carry (not printable ASCII): the server's own answer, as for any
    # other bad id, on unary calls and on a stream.
    for bad in ("caf\u00e9", "a\nb"):
        with pytest.raises(perceptrond.PerceptronError) as e:
            client.create_model(bad, dimension=3)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "model_id has character" in e.value.message
        with pytest.raises(perceptrond.PerceptronError) as e:
            client.model(bad).learn(np.ones((1, 3)), [1])
        assert e.value.code == grpc.StatusCode.NOT_FOUND
    # A token a header cannot carry is refused here, before any call.
    with pytest.raises(ValueError, match="not printable ASCII"):
        perceptrond.Client("127.0.0.1:1", token="t\u00f6ken")


def test_labels_are_read_as_the_command_line_reads_them(client):
    """+1/1/True is +1 and -1/0/False is -1, as numbers, booleans or strings: the same model."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((200, 3))
    signs = np.where(x @ [1.0, -2.0, 0.5] > 0, 1, -1)
    reference = client.create_model("signs", dimension=3).learn(x, signs)
    for name, y in (("zero_one", (signs + 1) // 2), ("bools", signs > 0),
                    ("floats", ((signs + 1) // 2).astype(float)),
                    ("strings", np.where(signs > 0, "+1", "0"))):
        got = client.create_model(name, dimension=3).learn(x, y)
        np.testing.assert_array_equal(got.scores, reference.scores, err_msg=name)
        np.testing.assert_array_equal(got.mistakes, reference.mistakes, err_msg=name)
    one = client.model("bools")
    one.learn_one(x[0], True)
    one.learn_one(x[1], False)
    one.close()
    assert one.status().stats.examples == len(x) + 2


def test_issue_then_reveal_equals_the_per_item_path(client):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((300, 8))
    x[17, 3] = np.inf
    y = np.where(x[:, 0] - x[:, 1] > 0, 1, -1)
    a = client.create_model("a", dimension=8)
    client.create_model("b", dimension=8)
    with a.stream() as s:
        issued = s.issue(x)
        assert [i for i, _ in issued.errors] == [17]
        good = np.flatnonzero(issued.ids)
        assert len(good) == 299 and len(set(issued.ids[good])) == 299
        assert np.array_equal(issued.labels[good], np.where(issued.scores[good] >= 0, 1, -1))
        outcome = s.reveal(issued.ids[good], y[good])
        assert outcome.errors == []
        again = s.reveal(issued.ids[good[:3]], y[good[:3]])  # revealed already
        assert [e.code for _, e in again.errors] == [grpc.StatusCode.NOT_FOUND] * 3
    # The same through items: examples, then reveals of the ids issued.
    def requests():
        r = pb.LearnRequest(model_id="b")
        for row in x:
            r.items.add().example.dense.values.extend(row.tolist())
        yield r
    (answer,) = list(client._stub.Learn(requests()))
    ids = [r.prediction.prediction_id for r in answer.results if r.HasField("prediction")]
    assert np.array_equal(ids, issued.ids[good])
    r = pb.LearnRequest(model_id="b")
    for i, label in zip(ids, y[good]):
        r.items.add().reveal.prediction_id = i
        r.items[-1].reveal.label = int(label)
    (answer,) = list(client._stub.Learn(iter([r])))
    assert np.array_equal(bits(outcome.scores), bits([o.outcome.score for o in answer.results]))
    assert np.array_equal(outcome.mistakes, [o.outcome.mistake for o in answer.results])
    assert np.array_equal(bits(a.weights()), bits(client.model("b").weights()))


def test_learn_one_and_predict_one(client):
    rng = np.random.default_rng(3)
    one = client.create_model("one", dimension=10)
    batch = client.create_model("batch", dimension=10)
    rows = []
    for _ in range(200):
        keys = sorted(rng.choice(10, size=3, replace=False).tolist())
        rows.append({k: float(rng.standard_normal()) for k in keys})
    y = [1 if sum(r.values()) > 0 else -1 for r in rows]
    mistakes = [one.learn_one(r, label) for r, label in zip(rows, y)]
    one.close()
    x = scipy.sparse.csr_matrix(
        (np.concatenate([list(r.values()) for r in rows]),
         np.concatenate([list(r.keys()) for r in rows]),
         np.cumsum([0] + [len(r) for r in rows])), shape=(200, 10))
    result = batch.learn(x, y)
    assert np.array_equal(mistakes, result.mistakes)
    assert np.array_equal(bits(one.weights()), bits(batch.weights()))
    assert one.predict_one(rows[0]) == int(batch.predict(x[0])[0])
    with pytest.raises(perceptrond.PerceptronError) as e:
        one.learn_one({12: 1.0}, 1)  # index out of range
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    one.close()


def test_no_rows_learn_and_predict_nothing(client):
    """An empty list or array (a buffer flushed with nothing in it) is a call that does
    nothing, for every kind of model and call, as a batch of no rows."""
    dense = client.create_model("none-dense", dimension=3)
    hashed = client.create_model("none-hashed", hash_bits=8)
    classes = client.create_model("none-classes", dimension=2, classes=["a", "b", "c"])
    for model in (dense, hashed, classes):
        for x in ([], np.zeros((0, 3)), scipy.sparse.csr_matrix((0, 3))):
            assert model.learn(x, []).scores.size == 0
            assert model.predict(x).size == 0
            assert model.decision_function(x).shape[0] == 0
            with model.stream() as stream:
                assert stream.learn(x, []).scores.size == 0
                assert stream.issue(x).ids.size == 0
        assert model.learn([], [], retry_for=1).scores.size == 0
        assert model.status().stats.examples == 0
    with pytest.raises(ValueError, match="1 labels for 0 examples"):
        dense.learn([], [1])


def test_predictions_of_more_rows_than_a_request_takes_go_in_several(client):
    """decision_function and predict of more rows than the server's --max_batch_items (10,000
    by default) send them in several Predict requests, in order: the same answers as smaller
    calls, for vectors, dicts by name and a multiclass model."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(12_345, 3))
    y = np.where(x[:, 0] + 0.3 * x[:, 1] > 0, 1, -1)
    dense = client.create_model("many-dense", dimension=3)
    dense.learn(x[:500], y[:500])
    scores = dense.decision_function(x)
    parts = np.concatenate([dense.decision_function(x[s:s + 1000])
                            for s in range(0, len(x), 1000)])
    assert scores.shape == (12_345,) and np.array_equal(bits(scores), bits(parts))
    assert np.array_equal(bits(dense.decision_function(x[:100], batch_size=7)),
                          bits(scores[:100]))
    assert np.array_equal(dense.predict(x), np.where(scores >= 0, 1, -1))
    sparse = scipy.sparse.csr_matrix(x)
    assert np.array_equal(bits(dense.decision_function(sparse)[-100:]),
                          bits(dense.decision_function(sparse[-100:])))
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        dense.predict(x, batch_size=0)
    hashed = client.create_model("many-hashed", hash_bits=10)
    rows = [{"a": float(r[0]), "b": float(r[1]), "c": str(int(r[2] > 0))} for r in x[:10_001]]
    hashed.learn(rows[:300], y[:300])
    named = hashed.decision_function(rows)
    assert named.shape == (10_001,)
    assert np.array_equal(bits(named[-50:]), bits(hashed.decision_function(rows[-50:])))
    classes = client.create_model("many-classes", dimension=3, classes=["a", "b", "c"])
    labels = np.array(["a", "b", "c"])[(x[:, 0] > 0).astype(int) + (x[:, 1] > 1)]
    classes.learn(x[:500], labels[:500])
    k = classes.decision_function(x)
    assert k.shape == (12_345, 3)
    assert np.array_equal(bits(k[-10:]), bits(classes.decision_function(x[-10:])))
    assert list(classes.predict(x)[-10:]) == list(classes.predict(x[-10:]))


def test_predict_columns_answer_as_the_same_examples_do(client):
    """PredictRequest.columns: the same labels and scores, bit for bit, as the same rows sent
    as examples (dense, sparse, by name, a multiclass model's k scores); labels in them,
    examples beside them, a bad row, arrays that disagree and more rows than the limit are
    refused whole; the client names a bad row by its place in its input."""
    from perceptrond._inputs import _named, _named_columns
    rng = np.random.default_rng(9)
    x = rng.normal(size=(50, 4))
    x[3, 1] = 0.0

    def both(model_id, fill_items, fill_columns, all_scores=False):
        items = pb.PredictRequest(model_id=model_id, all_scores=all_scores)
        columns = pb.PredictRequest(model_id=model_id, all_scores=all_scores)
        fill_items(items)
        fill_columns(columns.columns)
        a, b = client._call("Predict", items), client._call("Predict", columns)
        assert len(b.predictions) == 0 and len(a.predictions) == len(b.columns.scores) > 0
        assert np.array_equal(bits([p.score for p in a.predictions]), bits(b.columns.scores))
        assert [p.label for p in a.predictions] == list(b.columns.labels)
        assert [v for p in a.predictions for v in p.scores] == list(b.columns.class_scores)
        return b.columns

    def dense_items(r):
        for row in x:
            r.examples.add().dense.values.extend(row)

    def dense_columns(c):
        c.dense.extend(x.ravel())
        c.dense_rows = len(x)

    dense = client.create_model("pc-dense", dimension=4)
    dense.learn(x, np.where(x[:, 0] > 0, 1, -1))
    both("pc-dense", dense_items, dense_columns)
    csr = scipy.sparse.csr_matrix(x)

    def sparse_items(r):
        for i in range(len(x)):
            f = r.examples.add().sparse
            f.indices.extend(csr[i].indices.tolist())
            f.values.extend(csr[i].data)

    def sparse_columns(c):
        c.row_ends.extend(csr.indptr[1:].tolist())
        c.fixed_indices.extend(csr.indices.tolist())
        c.values.extend(csr.data)

    both("pc-dense", sparse_items, sparse_columns)
    rows = [{"a": float(r[0]), ("n", "b"): float(r[1]), "c": "yes" if r[2] > 0 else "no"}
            for r in x]
    hashed = client.create_model("pc-hashed", hash_bits=12)
    hashed.learn(rows, np.where(x[:, 0] > 0, 1, -1))
    both("pc-hashed", lambda r: [_named(row, r.examples.add().named) for row in rows],
         lambda c: c.MergeFromString(bytes(_named_columns(rows, None))))
    classes = client.create_model("pc-classes", dimension=4, classes=["a", "b", "c"])
    classes.learn(x, np.array(["a", "b", "c"])[np.argmax(x[:, :3], axis=1)])
    c = both("pc-classes", dense_items, dense_columns, all_scores=True)
    assert len(c.class_scores) == 3 * len(x)

    def refused(fill, code, message):
        r = pb.PredictRequest(model_id="pc-dense")
        fill(r)
        with pytest.raises(perceptrond.PerceptronError) as e:
            client._call("Predict", r)
        assert e.value.code == code and message in e.value.message, e.value.message

    invalid = grpc.StatusCode.INVALID_ARGUMENT
    refused(lambda r: (dense_columns(r.columns), r.columns.labels.extend([1] * len(x))),
            invalid, "columns to predict carry rows only, no labels or reveals")
    refused(lambda r: (dense_columns(r.columns), r.examples.add().dense.values.extend(x[0])),
            invalid, "a request carries examples or columns, not both")
    refused(lambda r: (r.columns.dense.extend([1.0] * 5), setattr(r.columns, "dense_rows", 1)),
            invalid, "5 dense values are not dense_rows (1) rows of the model's dimension 4")
    bad = x.copy()
    bad[7, 2] = np.nan
    with pytest.raises(perceptrond.PerceptronError) as e:
        dense.decision_function(bad)
    items = pb.PredictRequest(model_id="pc-dense")
    for row in bad:
        items.examples.add().dense.values.extend(row)
    with pytest.raises(perceptrond.PerceptronError) as per_item:
        client._call("Predict", items)
    assert e.value.code == invalid and e.value.message == per_item.value.message
    assert e.value.message.startswith("item 7: ") and e.value.item == 7
    with pytest.raises(perceptrond.PerceptronError) as e:
        dense.predict(bad, batch_size=5)  # row 7 is the third of the second request
    assert e.value.message == per_item.value.message and e.value.item == 7
    many = np.zeros((10_001, 4))
    refused(lambda r: (r.columns.dense.extend(many.ravel()),
                       setattr(r.columns, "dense_rows", len(many))),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "10001 rows in one request is over the limit of 10000")


def test_default_batches_fit_a_server_with_a_lower_batch_limit(tmp_path):
    """Against a server started with --max_batch_items=100, every call's default batches are
    of at most 100 items (learn, issue, reveal, predict; arrays and dicts by name);
    a batch_size given over the limit is the server's RESOURCE_EXHAUSTED, as before."""
    server = Perceptrond(os.environ["PERCEPTROND"], "--max_batch_items=100",
                         "--durability=none", data_dir=str(tmp_path / "data"))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1_000, 5))
    y = np.where(x[:, 0] > 0, 1, -1)
    try:
        with perceptrond.Client(server.target) as c:
            model = c.create_model("limited", dimension=5)
            result = model.learn(x, y)
            assert result.errors == [] and result.stats.examples == 1_000
            assert model.decision_function(x).shape == (1_000,)
            with model.stream() as s:
                issued = s.issue(x)
                assert issued.errors == [] and len(issued.ids) == 1_000
                assert s.reveal(issued.ids, y).errors == []
            assert model.status().stats.examples == 2_000
            named = c.create_model("limited-named", hash_bits=8)
            rows = [{"a": float(r[0]), "b": "yes" if r[1] > 0 else "no"} for r in x[:300]]
            assert named.learn(rows, y[:300]).errors == []
            assert named.predict(rows).shape == (300,)
            with pytest.raises(perceptrond.PerceptronError) as e:
                model.learn(x, y, batch_size=500)
            assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "over the limit of 100" in e.value.message
    finally:
        assert server.stop() == 0


def test_default_batches_fit_the_clients_message_limit(server):
    """A client whose max_message_bytes is 1 MiB sizes its default batches to half of it: dense
    rows of d = 1000 (8 KB a row; they went 262 rows, 2 MB, a request) and dicts of 200
    features (they went 1,024 a request, about 1.9 MB) are learned, issued and predicted;
    a batch_size over the limit is still grpcio's refusal. Long names are counted too."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(600, 1_000))
    y = np.where(x[:, 0] > 0, 1, -1)
    rows = [{f"w{j}": float(v) for j, v in enumerate(rng.normal(size=200))}
            for _ in range(1_100)]
    labels = np.where(rng.normal(size=1_100) > 0, 1, -1)
    with perceptrond.Client(server.target, max_message_bytes=1 << 20) as c:
        model = c.create_model("wide", dimension=1_000)
        assert model.learn(x, y).stats.examples == 600
        assert model.decision_function(x).shape == (600,)
        with model.stream() as s:
            assert s.issue(x).errors == []
        named = c.create_model("wide-named", hash_bits=12)
        assert named.learn(rows, labels).stats.examples == 1_100
        assert named.predict(rows).shape == (1_100,)
        with named.stream() as s:
            assert len(s.issue(rows).ids) == 1_100
        # The same features in a namespace: one key a dict, counted by its features.
        spaced = [{"w": row} for row in rows]
        assert named.learn(spaced, labels).stats.examples == 2_200
        assert named.predict(spaced).shape == (1_100,)
        with pytest.raises(perceptrond.PerceptronError) as e:
            model.learn(x, y, batch_size=600)
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Names are counted too: dicts of 200 features of 40-character names, each row's own,
    # went 1,024 a request, 5.8 MB, through a client of 4 MiB.
    long_rows = [{f"a_rather_long_feature_name_{i:05d}_{j:03d}_pad": 1.0 for j in range(200)}
                 for i in range(1_100)]
    with perceptrond.Client(server.target, max_message_bytes=4 << 20) as c:
        named = c.create_model("long-names", hash_bits=12)
        assert named.learn(long_rows, labels).stats.examples == 1_100
        assert named.predict(long_rows).shape == (1_100,)
        with named.stream() as s:
            assert len(s.issue(long_rows).ids) == 1_100


class _Refused(grpc.RpcError):
    def __init__(self, code):
        super().__init__()
        self._code = code

    def code(self):
        return self._code


class _ServerStatusStub:
    """GetServerStatus failing with each of `codes` in turn, then answering a limit of 100."""

    def __init__(self, *codes):
        self.codes, self.calls = list(codes), 0

    def GetServerStatus(self, request, timeout=None, metadata=None):
        self.calls += 1
        if self.codes:
            raise _Refused(self.codes.pop(0))
        return pb.ServerStatus(max_batch_items=100)


def test_the_batch_limit_is_asked_again_after_a_passing_failure_only():
    """The server's --max_batch_items is asked until it answers: a failure that passes (the
    server unreachable for a while) is asked again by the next call, one that lasts (a token
    that may not read the server's status) is not; an answer is kept."""
    with perceptrond.Client("127.0.0.1:1") as c:
        c._stub = stub = _ServerStatusStub(grpc.StatusCode.UNAVAILABLE,
                                           grpc.StatusCode.DEADLINE_EXCEEDED)
        assert [c._max_items("m") for _ in range(4)] == [0, 0, 100, 100]
        assert stub.calls == 3
    with perceptrond.Client("127.0.0.1:1") as c:
        c._stub = stub = _ServerStatusStub(grpc.StatusCode.PERMISSION_DENIED)
        assert [c._max_items("m") for _ in range(3)] == [0, 0, 0]
        assert stub.calls == 1


def test_status_history_watch_and_the_model_lifecycle(client):
    x, y = breast_cancer()
    model = client.create_model("bc", dimension=30)
    model.learn(x, y)
    status = model.status()
    assert status.stats.examples == 569
    assert model.history().points[-1].examples == 569
    for seen in model.watch(min_interval=0.05):
        assert seen.stats.examples == 569
        break
    assert model.info().config.dimension == 30
    assert client.get_model("bc").id == "bc"
    assert [m.model_id for m in client.list_models()] == ["bc"]
    blob = client.export_model("bc")
    copy = client.import_model(blob, "bc-copy")
    assert np.array_equal(bits(copy.weights()), bits(model.weights()))
    model.reset()
    assert model.status().stats.examples == 0
    model.delete()
    with pytest.raises(perceptrond.PerceptronError) as e:
        model.status()
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    client.health()
    server = client.server_status()
    assert (server.models, server.store_writing, server.store_error) == (1, True, "")
    assert server.resident_memory_bytes > 0 and server.allocator in ("tcmalloc", "system")


def test_installs_with_its_stubs(server, tmp_path):
    """pip builds and installs the package (stubs generated from proto/ on the way) into a
    directory, and a Python that sees only that directory and Debian's packages uses it."""
    # From a copy, as pip builds in the tree it is given.
    here = pathlib.Path(__file__).resolve().parent.parent
    source = tmp_path / "src" / "client" / "python"
    shutil.copytree(here, source, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    shutil.copytree(here.parent.parent / "proto", tmp_path / "src" / "proto")
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                          "--no-deps", "--no-index", "--target", str(tmp_path / "site"),
                          str(source)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # Nothing written into the source tree (build/, an egg-info).
    assert sorted(p.name for p in source.iterdir()) == sorted(
        p.name for p in here.iterdir() if p.name not in ("tests", "__pycache__"))
    assert (tmp_path / "site" / "perceptron" / "v1" / "perceptron_pb2.py").exists()
    assert (tmp_path / "site" / "perceptrond" / "py.typed").exists()
    program = ("import numpy, perceptrond\n"
               f"c = perceptrond.Client({server.target!r})\n"
               "m = c.create_model('installed', dimension=2)\n"
               "r = m.learn(numpy.array([[1.0, 2.0], [-1.0, -2.0]]), [1, -1])\n"
               "print(perceptrond.__file__, r.stats.examples)\n")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"),
                                            "PATH": os.environ.get("PATH", "")})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(str(tmp_path / "site")) and run.stdout.endswith(" 2\n")


def test_tokens_and_tls(tmp_path):
    """A server with TLS and tokens: the client's token and CA are sent; without the token
    UNAUTHENTICATED, with a read token PERMISSION_DENIED for learning."""
    ca_key, ca, key, csr, cert = (str(tmp_path / n) for n in
                                  ("ca.key", "ca.pem", "s.key", "s.csr", "s.pem"))
    for command in (
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key,
             "-out", ca, "-days", "1", "-subj", "/CN=test CA"],
            ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
             "-subj", "/CN=localhost"],
            ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
             "-CAcreateserial", "-out", cert, "-days", "1", "-extfile", "/dev/stdin"]):
        subprocess.run(command, check=True, capture_output=True,
                       input=b"subjectAltName=DNS:localhost,IP:127.0.0.1")
    tokens = tmp_path / "tokens"
    tokens.write_text("admin-token-0123456789 admin\nreader-token-0123456789 read\n")
    server = Perceptrond(os.environ["PERCEPTROND"], "--durability=none", "--tls_cert=" + cert,
                         "--tls_key=" + key, "--tokens_file=" + str(tokens))
    try:
        with open(ca, "rb") as f:
            tls = perceptrond.TLS(root_certificates=f.read())
        with perceptrond.Client(server.target, token="admin-token-0123456789", tls=tls) as c:
            model = c.create_model("secure", dimension=2)
            assert model.learn(np.array([[1.0, 0.0]]), [1]).stats.examples == 1
            c.health()
        with perceptrond.Client(server.target, tls=tls) as c:
            with pytest.raises(perceptrond.PerceptronError) as e:
                c.model("secure").status()
            assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        with perceptrond.Client(server.target, token="reader-token-0123456789", tls=tls) as c:
            assert c.model("secure").status().stats.examples == 1
            with pytest.raises(perceptrond.PerceptronError) as e:
                c.model("secure").learn(np.array([[1.0, 0.0]]), [1])
            assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
        # PEM bytes in the wrong field are named before a call.
        with open(key, "rb") as f:
            key_pem = f.read()
        with pytest.raises(ValueError, match="root_certificates holds no PEM -----BEGIN CERT"):
            perceptrond.Client(server.target, tls=perceptrond.TLS(root_certificates=key_pem))
        with pytest.raises(ValueError, match="certificate_chain and private_key go together"):
            perceptrond.Client(server.target, tls=perceptrond.TLS(
                root_certificates=tls.root_certificates,
                certificate_chain=tls.root_certificates))
    finally:
        assert server.stop() == 0


class OneBatchServer:
    """A server of the test's own that answers only each Learn stream's first batch, then ends
    the stream OK (a proxy cutting it short on the way), and notes each stream's client address
    and port (`peers`); GetModel says dimension 2, GetStatus the examples held. With
    `swallow`, the first stream's second batch is learned too but never answered (an answer
    lost with a broken stream)."""

    def __init__(self, swallow=False):
        from concurrent import futures
        self.held = 0
        self.swallow = swallow
        self.peers = []
        handlers = {
            "Learn": grpc.stream_stream_rpc_method_handler(
                self.learn, request_deserializer=pb.LearnRequest.FromString,
                response_serializer=pb.LearnResponse.SerializeToString),
            "GetModel": grpc.unary_unary_rpc_method_handler(
                lambda request, context: pb.Model(model_id=request.model_id,
                                                  config=pb.ModelConfig(dimension=2)),
                request_deserializer=pb.GetModelRequest.FromString,
                response_serializer=pb.Model.SerializeToString),
            "GetStatus": grpc.unary_unary_rpc_method_handler(
                lambda request, context: pb.ModelStatus(stats=pb.ModelStats(
                    examples=self.held)),
                request_deserializer=pb.GetStatusRequest.FromString,
                response_serializer=pb.ModelStatus.SerializeToString),
        }
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("perceptron.v1.PerceptronService", handlers),))
        self.target = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def learn(self, requests, context):
        self.peers.append(context.peer())
        first = next(requests)
        n = len(first.columns.labels)
        if first.HasField("if_examples") and first.if_examples != self.held:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "if_examples")
        self.held += n
        none = bytes((n + 7) // 8)  # no mistakes, no updates
        yield pb.LearnResponse(
            columns=pb.ColumnResults(scores=[1.0] * n, labels=[1] * n, mistakes=none,
                                     updates=none),
            stats=pb.ModelStats(examples=self.held))
        if self.swallow:
            self.swallow = False
            self.held += len(next(requests).columns.labels)

    def stop(self):
        self.server.stop(None)


def test_a_learn_stream_that_ends_ok_with_batches_unanswered_is_an_error():
    """A Learn stream cut short on the way (a proxy ending it OK before every batch is
    answered) is not a result: learn raises, and learn(retry_for=...) resumes where the model's
    count says, each resumed stream on a connection of its own (a proxy reloaded meanwhile may
    keep the old one on its old routes)."""
    fake = OneBatchServer()
    try:
        x, y = np.ones((10, 2)), np.ones(10)
        with perceptrond.Client(fake.target) as c:
            with pytest.raises(perceptrond.PerceptronError) as e:
                c.model("m").learn(x, y, batch_size=4)
            assert e.value.code == grpc.StatusCode.UNAVAILABLE
            assert "after 4 of 10 examples were answered" in e.value.message
            fake.held = 0
            fake.peers.clear()
            # Resumed stream by stream, one batch each: every example answered once.
            result = c.model("m").learn(x, y, batch_size=4, retry_for=30)
            assert fake.held == 10
            assert result.unanswered == []
            assert result.scores.tolist() == [1.0] * 10
            assert result.predicted.tolist() == [1] * 10
            assert len(fake.peers) == 3 and len(set(fake.peers)) == 3, fake.peers
            # The client's own connection is still there for its other calls.
            assert c.model("m").status().stats.examples == 10
    finally:
        fake.stop()


def test_an_answer_lost_with_a_broken_stream_is_listed_as_unanswered():
    """learn(retry_for=...) where the broken stream had the model learn a batch it never
    answered: those examples are listed in `unanswered`, their scores NaN and their labels 0,
    and the others are answered once each."""
    fake = OneBatchServer(swallow=True)
    try:
        x, y = np.ones((10, 2)), np.ones(10)
        with perceptrond.Client(fake.target) as c:
            result = c.model("m").learn(x, y, batch_size=4, retry_for=30)
        assert fake.held == 10
        assert result.unanswered == [4, 5, 6, 7]
        assert np.isnan(result.scores[4:8]).all() and result.scores[8:].tolist() == [1.0] * 2
        assert result.predicted.tolist() == [1] * 4 + [0] * 4 + [1] * 2
        assert not result.mistakes.any() and not result.errors
    finally:
        fake.stop()


def test_train_resumes_each_broken_stream_on_a_connection_of_its_own(tmp_path):
    """`perceptron train --retry_for` as learn(retry_for=...): a stream cut short is resumed
    at the model's count, and the waiting and the new stream go on a new connection."""
    data = tmp_path / "ten.svm"
    data.write_text("".join(f"+1 1:{i} 2:1\n" for i in range(10)))
    fake = OneBatchServer()
    try:
        run = subprocess.run([os.environ["PERCEPTRON_CLI"], "--server=" + fake.target, "train",
                              str(data), "--model=m", "--batch=4", "--in_flight=1",
                              "--retry_for=30s", "--progress=no"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert fake.held == 10
        assert run.stderr.count("resuming at example") == 2, run.stderr
        assert "(UNAVAILABLE: the Learn stream ended without an error" in run.stderr, run.stderr
        assert len(fake.peers) == 3 and len(set(fake.peers)) == 3, (fake.peers, run.stderr)
    finally:
        fake.stop()


def test_the_models_weights_are_bounded_by_max_models_mb(tmp_path):
    """--max_models_mb bounds the bytes every model's weight vectors may take together: a model
    past it is not created or imported (RESOURCE_EXHAUSTED, nothing made), deleting one gives
    its bytes back, and a restart with a lower bound still recovers every model stored."""
    binary, data = os.environ["PERCEPTROND"], str(tmp_path / "data")
    wide = (2 ** 21 + 1) * 8  # a classic model of d = 2^21 with its bias: 16 MiB and 8 bytes
    server = Perceptrond(binary, "--max_models_mb=40", data_dir=data)
    try:
        with perceptrond.Client(server.target) as c:
            c.create_model("a", dimension=2 ** 21)
            c.create_model("b", dimension=2 ** 21)
            for make in (lambda: c.create_model("c", dimension=2 ** 21),
                         lambda: c.create_model("avg", dimension=2 ** 20, algorithm="averaged"),
                         lambda: c.import_model(c.export_model("b"), "b2")):
                with pytest.raises(perceptrond.PerceptronError) as e:
                    make()
                assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
                assert "of the 40.0 MiB the server gives models (--max_models_mb)" \
                    in e.value.message, e.value.message
            assert [m.model_id for m in c.list_models()] == ["a", "b"]
            status = c.server_status()
            assert (status.models_weight_bytes, status.max_models_weight_bytes) == \
                (2 * wide, 40 << 20)
            c.create_model("small", dimension=10)  # (10 + 1) * 8 bytes still fit
            # What a model may come to hold counts: the voted rule's past vectors (as many as
            # max_voted_vectors) and a comparator's two copies (given and scaled), 8 MiB left.
            for make, takes in (
                    (lambda: c.create_model("voted", dimension=2 ** 13, algorithm="voted"),
                     "62.6 MiB"),  # 1001 vectors of 2^13 + 1
                    (lambda: c.create_model("u", dimension=2 ** 19, gamma=0.5,
                                            comparator={0: 1.0}), "12.0 MiB")):  # 3 of 2^19 + 1
                with pytest.raises(perceptrond.PerceptronError) as e:
                    make()
                assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
                assert "the model takes " + takes in e.value.message, e.value.message
            c.create_model("voted", dimension=2 ** 13, algorithm="voted", max_voted_vectors=99)
            assert c.server_status().models_weight_bytes == 2 * wide + 88 + 100 * (2 ** 13 + 1) * 8
            c.model("voted").delete()
            c.model("a").delete()
            c.create_model("c", dimension=2 ** 21)
            assert c.server_status().models_weight_bytes == 2 * wide + 88
    finally:
        assert server.stop() == 0
    server = Perceptrond(binary, "--max_models_mb=1", data_dir=data)
    try:
        with perceptrond.Client(server.target) as c:
            assert sorted(m.model_id for m in c.list_models()) == ["b", "c", "small"]
            assert c.server_status().models_weight_bytes == 2 * wide + 88
            with pytest.raises(perceptrond.PerceptronError, match="--max_models_mb"):
                c.create_model("d", dimension=2 ** 17)
    finally:
        assert server.stop() == 0


def test_a_kernel_models_stored_mistakes_count_in_max_models_mb(tmp_path):
    """A kernel model's stored mistakes take memory as it learns: they count in
    --max_models_mb with the weights, and once the models' bytes are past it the model's
    learning is refused (RESOURCE_EXHAUSTED, naming the flag, nothing applied) and no model is
    created, while predictions go on; a reset gives the room back, and a restart counts the
    stored mistakes again."""
    binary, data = os.environ["PERCEPTROND"], str(tmp_path / "data")
    # An rbf kernel of sigma 1 over Gaussian rows of d = 1000, not normalized: k(x, x') =
    # exp(-||x - x'||^2 / 2) is 0 in doubles, so every example is a mistake and is stored, with
    # its 1001 non-zeros (the bias too) of 12 bytes and a fixed cost for its entry.
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(200, 1000)), np.where(rng.random(200) < 0.5, -1, 1)
    server = Perceptrond(binary, "--max_models_mb=1", data_dir=data)
    try:
        with perceptrond.Client(server.target) as c:
            model = c.create_model("k", dimension=1000, algorithm="kernel", kernel="rbf",
                                   sigma=1.0, normalize=False)
            with pytest.raises(perceptrond.PerceptronError) as e:
                model.learn(X, y, batch_size=10)
            assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
            assert "a kernel model stores its mistakes, and the server's memory for models " \
                "(--max_models_mb) is taken: 1.04 MiB of 1.00 MiB; nothing was applied (a " \
                "reset or a model deleted gives room back)" in e.value.message, e.value
            # Each batch is let in while the bytes are within 1 MiB: 86 mistakes of about
            # 12 KB fit, the ninth batch of 10 passes the bound, and the tenth is refused.
            status = model.status()
            assert (status.stats.examples, status.stats.mistakes, status.support_vectors) == \
                (90, 90, 90)
            held = c.server_status().models_weight_bytes
            assert held == 90 * (12 * 1001 + 64), held  # 64 bytes for a stored mistake's entry
            with pytest.raises(perceptrond.PerceptronError, match="--max_models_mb"):
                c.create_model("small", dimension=10)
            assert len(model.predict(X[:5])) == 5
            # An import counts its stored mistakes: a copy of the model is refused, saying so.
            with pytest.raises(perceptrond.PerceptronError) as e:
                c.import_model(c.export_model("k"), "copy")
            assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
            assert f"the model takes {held / 2 ** 20:.1f} MiB, and the 1 models held take " \
                f"{held / 2 ** 20:.1f} MiB of the 1.0 MiB" in e.value.message, e.value.message
            assert c.server_status().models_weight_bytes == held
    finally:
        assert server.stop() == 0
    server = Perceptrond(binary, "--max_models_mb=1", data_dir=data)
    try:
        with perceptrond.Client(server.target) as c:
            model = c.model("k")
            assert model.status().support_vectors == 90
            assert c.server_status().models_weight_bytes == held
            with pytest.raises(perceptrond.PerceptronError, match="--max_models_mb"):
                model.learn(X[:1], y[:1])
            # The CLI says the refusal and what the model holds after it.
            svm = tmp_path / "rows.svm"
            svm.write_text("".join(f"{label} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in
                                                          enumerate(row)) + "\n"
                                   for row, label in zip(X[:20], y[:20])))
            run = subprocess.run([os.environ["PERCEPTRON_CLI"], "--server=" + server.target,
                                  "train", str(svm), "--model=k", "--progress=no"],
                                 capture_output=True, text=True, timeout=60)
            assert run.returncode == 1, run
            assert "perceptron: RESOURCE_EXHAUSTED: a kernel model stores its mistakes" \
                in run.stderr, run.stderr
            assert "perceptron: k now: 90 examples, 90 mistakes, 90 updates (the requests " \
                "before the refused one were learned)" in run.stderr, run.stderr
            model.reset()
            assert c.server_status().models_weight_bytes == 0
            assert model.learn(X[:10], y[:10]).mistakes.sum() == 10
            assert c.server_status().models_weight_bytes == held // 9
            c.create_model("small", dimension=10)
            model.delete()
            assert c.server_status().models_weight_bytes == 88
    finally:
        assert server.stop() == 0


def test_pending_predictions_of_every_model_are_bounded_by_max_pending_mb(tmp_path):
    """--max_pending_mb bounds what every model's pending predictions hold together: past it
    a prediction is refused (RESOURCE_EXHAUSTED, naming the flag, nothing issued) whichever
    model asks, and another model's reveals give the room back; the server's status says
    the figures."""
    binary, data = os.environ["PERCEPTROND"], str(tmp_path / "data")
    server = Perceptrond(binary, "--max_pending_mb=1", "--durability=none", data_dir=data)
    x = np.ones((100, 1000))  # about 8 KB a pending prediction: 100 hold about 0.8 MiB
    try:
        with perceptrond.Client(server.target) as c:
            a = c.create_model("a", dimension=1000)
            b = c.create_model("b", dimension=1000)
            with a.stream() as s:
                first = s.issue(x)
            assert first.errors == []
            status = c.server_status()
            assert status.max_pending_prediction_bytes == 1 << 20
            one = status.pending_prediction_bytes // 100
            assert one * 100 == status.pending_prediction_bytes and one > 8000
            room = ((1 << 20) - 100 * one) // one
            with b.stream() as s:
                second = s.issue(x)
            assert [i for i, _ in second.errors] == list(range(room, 100))
            for _, e in second.errors:
                assert e.code == grpc.StatusCode.RESOURCE_EXHAUSTED, e
                assert "pending predictions (--max_pending_mb) is taken" in e.message, e.message
            assert np.count_nonzero(second.ids) == room
            assert b.status().stats.pending == room
            assert c.server_status().pending_prediction_bytes == (100 + room) * one
            with a.stream() as s:
                assert s.reveal(first.ids, np.ones(100)).errors == []
            assert c.server_status().pending_prediction_bytes == room * one
            with b.stream() as s:
                assert s.issue(x).errors == []
            assert c.server_status().pending_prediction_bytes == (100 + room) * one
            b.delete()
            assert c.server_status().pending_prediction_bytes == 0
    finally:
        assert server.stop() == 0


def test_feature_names_of_every_model_are_bounded_by_name_tables_mb(tmp_path):
    """--name_tables_mb bounds the names every hashing model keeps together: past it no model
    keeps new names (their slots are counted unnamed; learning goes on), deleting a model
    gives its names' room back, and the server's status says the figures."""
    binary, data = os.environ["PERCEPTROND"], str(tmp_path / "data")
    server = Perceptrond(binary, "--name_tables_mb=1", "--durability=none", data_dir=data)
    rows = [{f"w{10 * i + k}": 1.0 for k in range(10)} for i in range(2000)]  # 20,000 names
    y = np.where(np.arange(2000) % 2 == 0, 1, -1)
    try:
        with perceptrond.Client(server.target) as c:
            a = c.create_model("a", hash_bits=20)
            assert a.learn(rows, y).errors == []
            status = c.server_status()
            assert status.max_name_bytes == 1 << 20
            names = a.status().names
            assert status.name_bytes == names.bytes
            assert (1 << 20) - 100 < names.bytes <= 1 << 20, names
            assert names.unnamed_slots > 4000 and names.names + names.unnamed_slots >= 19900
            b = c.create_model("b", hash_bits=20)
            assert b.learn(rows[:10], y[:10]).errors == []
            assert b.status().names.names == 0
            assert b.status().stats.examples == 10
            a.delete()
            assert c.server_status().name_bytes == 0
            assert b.learn(rows[10:20], y[10:20]).errors == []
            assert b.status().names.names == 100
            assert c.server_status().name_bytes == b.status().names.bytes
    finally:
        assert server.stop() == 0
