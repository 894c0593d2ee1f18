"""pandas DataFrames through the Python package: read by their columns' names for a model by
name (as the command-line client reads the same table as a CSV file, and as the same rows as
dicts), as a matrix for a model of vectors, and by the scikit-learn estimator."""
import numpy as np
import pandas as pd
import pytest

from perceptron.v1 import perceptron_pb2 as pb
from perceptrond._inputs import _frame_batches, _frame_rows, _named_columns
from test_named import assert_learned_as, bits, cli, counters


def people(n=120):
    """A table of numbers, strings and a category, with missing cells of each kind, and its
    labels (-1/+1)."""
    rng = np.random.default_rng(3)
    age = rng.integers(18, 80, n).astype(float)
    age[::7] = np.nan
    city = rng.choice(["paris", "lyon", "nice"], n).astype(object)
    city[::5] = None
    frame = pd.DataFrame({
        "age": age,
        "city": city,
        "colour": pd.Categorical(rng.choice(["red", "blue", "green"], n)),
        "score": np.round(rng.normal(size=n), 3),
    })
    y = np.where((frame.score > 0) ^ (frame.colour == "red"), 1, -1)
    return frame, y


def as_dicts(frame):
    """The rows as a user would write them by hand: a missing cell left out."""
    rows = []
    for _, r in frame.iterrows():
        rows.append({k: (str(v) if isinstance(v, str) else float(v))
                     for k, v in r.items() if not pd.isna(v)})
    return rows


def every_kind(n, seed):
    """A table with a column of each kind a DataFrame holds, missing cells in each."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, 7, n)
    mixed = [["paris", 3, 2.5, None, np.nan, True, False][k] for k in pick]
    numbers = rng.normal(size=n)
    numbers[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "x": numbers,
        "count": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(-5, 5, n)),
                          dtype="Int64"),
        "mixed": pd.Series(mixed, dtype=object),
        "city": pd.Categorical(rng.choice(["lyon", "nice", None], n)),
        "size": pd.Categorical(rng.choice([1, 2, 3], n)),
        "flag": rng.random(n) < 0.5,
        "maybe": pd.array(rng.choice([True, False, None], n), dtype="boolean"),
        "word": pd.array(rng.choice(["α", "été", None], n), dtype="string"),
        7: rng.integers(0, 3, n),
    })


def decoded(columns):
    """The rows of a serialized Columns by name: per row, its features as (namespace, name,
    value) with a categorical one's value its string, read back from the table."""
    c = pb.Columns.FromString(bytes(columns))
    ends = np.cumsum(list(c.text_lengths))
    table = [c.text[a:b].decode() for a, b in zip(np.r_[0, ends[:-1]], ends)] or list(c.strings)
    rows, start = [], 0
    for end in c.row_ends:
        row = []
        for j in range(start, end):
            space = table[c.named_spaces[j]] if c.named_spaces else ""
            if c.named_categories and c.named_categories[j]:
                value = table[c.named_categories[j] - 1]
            else:
                value = c.named_values[j] if c.named_values else 1.0
            row.append((space, table[c.named_names[j]], value))
        rows.append(row)
        start = end
    return rows, list(c.labels)


@pytest.mark.parametrize("seed", range(6))
def test_a_dataframe_is_encoded_column_by_column_as_its_rows_as_dicts_are(seed):
    frame = every_kind(300, seed)
    if seed % 2:  # namespaces: a MultiIndex's pairs
        frame.columns = pd.MultiIndex.from_tuples(
            [("ab"[k % 2], str(c)) for k, c in enumerate(frame.columns)])
    labels = np.random.default_rng(seed).integers(0, 4, 300)
    batch = [1, 7, 64, 300, 1000, 299][seed]
    rows = _frame_rows(frame)
    expected, got = [], []
    for s in range(0, 300, batch):
        expected.append(decoded(_named_columns(rows[s:s + batch], labels[s:s + batch])))
    for columns in _frame_batches(frame, labels, batch):
        got.append(decoded(columns))
    assert got == expected
    assert sum(len(r) for part in got for r in part[0]) > 300 * 4  # most cells are features


def test_a_dataframe_learns_as_its_csv_file_and_its_rows_as_dicts_do(client, server, tmp_path):
    frame, y = people()
    csv = tmp_path / "people.csv"
    frame.assign(label=y).to_csv(csv, index=False)  # a missing cell written empty
    code, out = cli(server, "train", str(csv), "--model=csv", "--create", "--hash_bits=16",
                    "--nonormalize")
    assert code == 0, out
    dicts = client.create_model("dicts", hash_bits=16, normalize=False)
    dicts.learn(as_dicts(frame), y)
    assert_learned_as(client.model("csv"), dicts)
    assert counters(dicts)[0] == len(y)
    whole = client.create_model("frame", hash_bits=16, normalize=False)
    result = whole.learn(frame, y, batch_size=50)
    assert result.errors == [] and len(result.mistakes) == len(y)
    assert_learned_as(whole, dicts)
    # A stream's batches, and a row (a Series) at a time with learn_one: the same model.
    streamed = client.create_model("streamed", hash_bits=16, normalize=False)
    with streamed.stream() as s:
        s.learn(frame[:60], y[:60])
        s.learn(frame[60:], y[60:])
    assert_learned_as(streamed, dicts)
    one = client.create_model("one", hash_bits=16, normalize=False)
    mistakes = [one.learn_one(row, label) for (_, row), label in zip(frame.iterrows(), y)]
    one.close()
    assert_learned_as(one, dicts)
    assert mistakes == list(result.mistakes)
    # Scores: the frame's, its rows' as dicts and a row's alone.
    np.testing.assert_array_equal(bits(whole.decision_function(frame)),
                                  bits(whole.decision_function(as_dicts(frame))))
    assert whole.predict_one(frame.iloc[3]) == whole.predict(frame[3:4])[0]
    with whole.stream() as s:
        issued = s.issue(frame[:10])
    np.testing.assert_array_equal(bits(issued.scores),
                                  bits(whole.decision_function(frame[:10])))
    # A category's value is the feature "colour=red", at the slot the CSV's cell has.
    names = {name for _, _, name in whole.top_features(50)}
    assert {"colour=red", "city=paris", "age", "score"} <= names, names


def test_a_dataframe_reads_namespaces_strings_and_booleans_as_dicts_do(client):
    # A MultiIndex's pairs are (namespace, name); a string is categorical even when it holds
    # digits (a CSV cell of digits is a number: the DataFrame says it is text); True is the
    # value 1, False no feature, as in a dict.
    frame = pd.DataFrame({("a", "zip"): ["75001", "69002", None],
                          ("a", "n"): [1, 2, 3],
                          ("b", "member"): [True, False, True]})
    rows = [{("a", "zip"): "75001", ("a", "n"): 1, ("b", "member"): True},
            {("a", "zip"): "69002", ("a", "n"): 2},
            {("a", "n"): 3, ("b", "member"): True}]
    y = [1, -1, 1]
    by_frame = client.create_model("by-frame", hash_bits=12)
    by_dicts = client.create_model("by-dicts", hash_bits=12)
    by_frame.learn(frame, y)
    by_dicts.learn(rows, y)
    assert_learned_as(by_frame, by_dicts)
    names = {name for _, _, name in by_frame.top_features(20)}
    assert {"a^zip=75001", "a^n", "b^member"} <= names, names


def test_a_dataframe_of_numbers_is_a_matrix_for_a_model_of_vectors(client):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(80, 3))
    y = np.where(x[:, 0] > 0, 1, -1)
    frame = pd.DataFrame(x, columns=["a", "b", "c"])
    by_frame = client.create_model("by-frame", 3)
    by_array = client.create_model("by-array", 3)
    by_frame.learn(frame, y)
    by_array.learn(x, y)
    assert_learned_as(by_frame, by_array)
    np.testing.assert_array_equal(bits(by_frame.decision_function(frame)),
                                  bits(by_array.decision_function(x)))
    assert by_frame.learn_one(frame.iloc[0], 1) == by_array.learn_one(x[0], 1)
    # An object column of numbers is numbers; one of text is refused, nothing learned.
    objects = frame.astype(object)
    assert by_frame.predict(objects).tolist() == by_array.predict(x).tolist()
    before = counters(by_frame)
    text = frame.assign(b=["x"] * 80)
    with pytest.raises(ValueError, match="column 'b' of the DataFrame is not numbers: model "
                                         "'by-frame' takes vectors of dimension 3"):
        by_frame.learn(text, y)
    assert counters(by_frame) == before
    # Two columns of one name would be one feature by name: refused.
    named = client.create_model("named", hash_bits=10)
    with pytest.raises(ValueError, match="two columns named 'a'"):
        named.learn(pd.DataFrame([[1, 2]], columns=["a", "a"]), [1])
    assert counters(named) == (0, 0, 0)


def test_the_sklearn_estimator_reads_a_dataframe_of_categories_by_name(server):
    from perceptrond.sklearn import PerceptronClassifier
    frame, y = people()
    labels = np.where(y == 1, "yes", "no")
    # Passes in a random order: the frame's rows (sent as columns) as the dicts (as items).
    by_frame = PerceptronClassifier(address=server.target, hash_bits=16, max_iter=4,
                                    shuffle=True, random_state=7)
    by_frame.fit(frame, labels)
    by_dicts = PerceptronClassifier(address=server.target, hash_bits=16, max_iter=4,
                                    shuffle=True, random_state=7)
    by_dicts.fit(as_dicts(frame), labels)
    np.testing.assert_array_equal(bits(by_frame.decision_function(frame)),
                                  bits(by_dicts.decision_function(as_dicts(frame))))
    assert (by_frame.n_iter_, by_frame.mistakes_) == (by_dicts.n_iter_, by_dicts.mistakes_)
    assert not hasattr(by_frame, "n_features_in_")
    # partial_fit, from the first call on, of frames and of lists of dicts in turn: the same
    # as one pass of fit.
    one_pass = PerceptronClassifier(address=server.target, hash_bits=16, max_iter=1)
    one_pass.fit(frame, labels)
    parts = PerceptronClassifier(address=server.target, hash_bits=16)
    for k, s in enumerate(range(0, len(labels), 40)):
        part = frame[s:s + 40] if k % 2 == 0 else as_dicts(frame[s:s + 40])
        parts.partial_fit(part, labels[s:s + 40], classes=["no", "yes"])
    np.testing.assert_array_equal(bits(parts.decision_function(frame)),
                                  bits(one_pass.decision_function(frame)))
    # A frame of numbers is a matrix (with its names kept, as scikit-learn's estimators keep
    # them); fitted by name again, the matrix's figures go.
    numbers = frame[["score"]].assign(bias=1.0)
    by_frame.fit(numbers, labels)
    assert by_frame.n_features_in_ == 2
    assert list(by_frame.feature_names_in_) == ["score", "bias"]
    by_frame.fit(frame, labels)
    assert not hasattr(by_frame, "n_features_in_") and not hasattr(by_frame, "feature_names_in_")
    for clf in (by_frame, by_dicts, one_pass, parts):
        clf.delete_models()
