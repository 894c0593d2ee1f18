"""Features by name (docs/design.md section 2.9) through the Python package, against an
independent implementation of Vowpal Wabbit's hashing (tests/support/vw_hash.py): the same
examples as dicts, one by one, and as indices hashed by the test give bit-identical models."""
import gzip
import json
import math
import os
import random
import re
import subprocess

import numpy as np
import pytest
import scipy.sparse

import perceptrond
from perceptron.v1 import perceptron_pb2 as pb
import vw_hash
from perceptrond_process import Perceptrond, settled

BITS = 18
INTERACTIONS = ["ab"]


def text_like(n, seed=7):
    """n examples of named features in namespaces a, b and the default one: words, numeric
    names, categorical values, UTF-8; labels from a hidden rule."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)] + ["café", "日本", "123", "0"]
    rows, labels = [], []
    for _ in range(n):
        x = {}
        for _ in range(rng.randint(1, 6)):
            x[("a", rng.choice(words))] = 1.0
        x[("b", "len")] = float(rng.randint(1, 9)) / 4
        x["colour"] = rng.choice(["red", "green", "blue"])
        if rng.random() < 0.3:
            x[str(rng.randint(0, 50))] = rng.uniform(-1, 1)
        score = sum(1 for k in x if isinstance(k, tuple) and k[1] < "w150") - 2
        score += 1.5 if x["colour"] == "red" else 0
        rows.append(x)
        labels.append(1 if score >= 0 else -1)
    return rows, labels


def hashed(rows):
    """The rows as a CSR matrix of hashed coordinates, computed by the test alone."""
    indptr, indices, values = [0], [], []
    for x in rows:
        h = vw_hash.hash_example(vw_hash.triples(x), BITS, INTERACTIONS)
        for s in sorted(h):
            indices.append(s)
            values.append(h[s])
        indptr.append(len(indices))
    return scipy.sparse.csr_matrix((values, indices, indptr), shape=(len(rows), 1 << BITS))


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def counters(model):
    s = model.status().stats
    return (s.examples, s.mistakes, s.updates)


def assert_learned_as(model, reference):
    """The same counters and, bit for bit, the same weights."""
    assert counters(model) == counters(reference), model.id
    np.testing.assert_array_equal(bits(model.weights()), bits(reference.weights()))


def test_names_dicts_one_by_one_and_indices_agree_bit_for_bit(client):
    rows, y = text_like(400)
    by_name = client.create_model("by-name", hash_bits=BITS, interactions=INTERACTIONS)
    one = client.create_model("one", hash_bits=BITS, interactions=INTERACTIONS)
    by_index = client.create_model("by-index", hash_bits=BITS, interactions=INTERACTIONS)
    assert by_name.info().config.dimension == 1 << BITS

    result = by_name.learn(rows, y)
    assert not result.errors
    mistakes = [one.learn_one(x, label) for x, label in zip(rows, y)]
    one.close()
    indexed = by_index.learn(hashed(rows), y)
    assert not indexed.errors

    assert list(result.mistakes) == mistakes == list(indexed.mistakes)
    assert counters(by_name) == counters(one) == counters(by_index)
    assert counters(by_name)[1] < len(rows) / 2, "the rule is learnable"
    np.testing.assert_array_equal(bits(by_name.weights()), bits(by_index.weights()))
    np.testing.assert_array_equal(bits(one.weights()), bits(by_index.weights()))
    for x in rows[:20]:
        row = hashed([x])
        assert by_name.predict_one(x) == by_index.predict(row)[0]
    # A stream's dicts go as items (one request a batch), answered alike.
    with client.create_model("stream", hash_bits=BITS, interactions=INTERACTIONS).stream() as s:
        streamed = s.learn(rows, y, batch_size=64)
    assert not streamed.errors and set(streamed.predicted) == {-1, 1}
    assert streamed.predicted.tolist() == result.predicted.tolist() == indexed.predicted.tolist()
    np.testing.assert_array_equal(bits(streamed.scores), bits(result.scores))


def test_numeric_names_are_their_numbers(client):
    model = client.create_model("numbers", hash_bits=10, normalize=False, bias=False)
    model.learn_one({"3": 2.0, "7": 1.0}, 1)
    w = model.weights()
    assert w[3] == 2.0 and w[7] == 1.0 and np.count_nonzero(w) == 2


def test_dense_numpy_row_with_learn_one(client):
    model = client.create_model("dense", 3)
    assert model.learn_one(np.array([1.0, 0.0, 2.0]), 1) is True
    assert model.predict_one(np.array([1.0, 0.0, 2.0])) == 1
    # A row of another width is refused by the client; for a model that takes names,
    # the message says so.
    hashed = client.create_model("hashed", hash_bits=8)
    with pytest.raises(ValueError, match=re.escape("model 'dense' has dimension 3")):
        model.learn_one(np.array([1.0, 2.0]), 1)
    with pytest.raises(ValueError, match=re.escape(
            "model 'hashed' has dimension 256 (it takes features by name: dicts")):
        hashed.learn_one(np.array([1.0, 2.0]), 1)
    assert hashed.status().stats.examples == 0


def test_named_columns_read_every_row_as_its_features_are_read():
    # The columns' inline reading of common rows (string keys, float/int/string values)
    # and its fallback from a row's start for any other: the same columns as every row
    # read feature by feature (_features), the strings' table in first-use order.
    from perceptrond import _inputs
    from perceptron.v1 import perceptron_pb2 as pb

    def reference(rows, labels):
        table, names, spaces, values, categories, ends = {}, [], [], [], [], []
        ref = lambda t: table.setdefault(t, len(table))  # noqa: E731
        for x in rows:
            for space, name, value in _inputs._features(x):
                names.append(ref(name))
                spaces.append(space)
                categories.append(ref(value) + 1 if isinstance(value, str) else 0)
                values.append(1.0 if isinstance(value, str) else float(value))
            ends.append(len(names))
        c = pb.Columns(row_ends=ends, named_names=names, labels=labels)
        if any(spaces):
            c.named_spaces.extend(ref(s) for s in spaces)
        if any(v != 1.0 for v in values):
            c.named_values.extend(values)
        if any(categories):
            c.named_categories.extend(categories)
        encoded = [t.encode() for t in table]
        c.text = b"".join(encoded)
        c.text_lengths.extend(len(t) for t in encoded)
        return c

    rows = [{"a": 1.0, ("ns", "b"): 2, "c": "x"},
            {"a": 3.0, "gone": None, "d": 1.5},             # falls back at its 2nd feature
            {("ns", "b"): "y", 7: 2.0, "e": np.float64(4)},  # at an int key
            {"u": {"v": 1.0}, "a": True},                    # a namespace; True
            {"f": 2.5, ("ns", "g"): np.str_("z"), "h": False},
            {}, {"a": -1}]
    labels = [1, -1, 1, -1, 1, -1, 1]
    got = pb.Columns.FromString(_inputs._named_columns(rows, np.array(labels)))
    assert got == reference(rows, labels)
    # A table that is not all ASCII: lengths in bytes.
    rows.append({"é": 1.0, ("名前", "k"): "红"})
    labels.append(1)
    got = pb.Columns.FromString(_inputs._named_columns(rows, np.array(labels)))
    assert got == reference(rows, labels)
    assert len(got.text) > len(got.text.decode())  # more bytes than characters
    assert sum(got.text_lengths) == len(got.text)


def test_dicts_read_none_false_and_nested_dicts_as_a_json_line_is_read(client):
    # None and False are no feature, True the value 1, a nested dict a namespace: the
    # same model as the plain form, item by item and as columns.
    loose = [{"city": "paris", "age": 3.0, "gone": None, "off": False, "on": True,
              "user": {"id": 7.0, "tier": "gold"}},
             {"city": "lyon", "age": None, "user": {"id": 2.0, "lost": None}}]
    plain = [{"city": "paris", "age": 3.0, "on": 1.0, ("user", "id"): 7.0,
              ("user", "tier"): "gold"},
             {"city": "lyon", ("user", "id"): 2.0}]
    y = [1, -1]
    a = client.create_model("loose", hash_bits=12)
    b = client.create_model("plain", hash_bits=12)
    one = client.create_model("loose-one", hash_bits=12)
    a.learn(loose * 5, y * 5)
    b.learn(plain * 5, y * 5)
    for _ in range(5):
        for x, label in zip(loose, y):
            one.learn_one(x, label)
    one.close()
    assert counters(a) == counters(b) == counters(one)
    np.testing.assert_array_equal(bits(a.weights()), bits(b.weights()))
    np.testing.assert_array_equal(bits(one.weights()), bits(b.weights()))
    # Anything else is refused by the client, naming the feature, with nothing sent.
    before = counters(a)
    for bad, says in (({"tags": ["a", "b"]}, "feature tags: ['a', 'b'] is not a number"),
                      ({"u": {"v": {"w": 1}}}, "a namespace holds features")):
        with pytest.raises(ValueError, match=re.escape(says)):
            a.learn([{"a": 1.0}, bad], [1, 1])
        with pytest.raises(ValueError, match=re.escape(says)):
            a.learn_one(bad, 1)
    assert counters(a) == before
    # A row whose every value is None or False has no feature: it learns as the bias alone,
    # as an empty row by index does, one by one and in a batch.
    empty = client.create_model("empty-by-index", hash_bits=12)
    gone = client.create_model("empty-by-name", hash_bits=12)
    gone_one = client.create_model("empty-by-name-one", hash_bits=12)
    rows = [{"city": "paris"}, {}, {"city": "lyon"}, {}]
    named = [r if r else {"gone": None, "off": False} for r in rows]
    gone.learn(named, [1, -1, 1, 1])
    for x, label in zip(rows, [1, -1, 1, 1]):
        empty.learn_one(x, label)  # {} goes by index
    for x, label in zip(named, [1, -1, 1, 1]):
        gone_one.learn_one(x, label)
    empty.close()
    gone_one.close()
    assert counters(gone) == counters(empty) == counters(gone_one)
    assert counters(gone)[0] == 4
    np.testing.assert_array_equal(bits(gone.weights()), bits(empty.weights()))
    np.testing.assert_array_equal(bits(gone_one.weights()), bits(empty.weights()))


@pytest.mark.parametrize("bad, says", [
    ({"": 1.0}, "the name is empty"),
    ({"x" * 1025: 1.0}, "over the limit of 1024"),
    ({"v": math.nan}, "is not finite"),
    ({"v": math.inf}, "is not finite"),
    ({f"n{i}": 1.0 for i in range(10001)}, "over the limit of 10000"),
])
def test_bad_named_features_refuse_the_item_and_change_nothing(client, bad, says):
    model = client.create_model("m", hash_bits=12)
    model.learn([{"a": 1.0}, {"b": 1.0}], [1, -1])
    before = (bits(model.weights()).tolist(), counters(model))
    result = model.learn([{"c": 1.0}, bad], [1, 1])
    assert [i for i, _ in result.errors] == [1]
    assert says in result.errors[0][1].message
    assert result.errors[0][1].code.name == "INVALID_ARGUMENT"
    model.learn([{"c": 1.0}], [-1])  # undo item 0's change for the comparison below
    fresh = client.create_model("fresh", hash_bits=12)
    fresh.learn([{"a": 1.0}, {"b": 1.0}, {"c": 1.0}, {"c": 1.0}], [1, -1, 1, -1])
    assert bits(model.weights()).tolist() == bits(fresh.weights()).tolist()
    assert counters(model) == counters(fresh)
    assert before[1][0] + 2 == counters(model)[0]


@pytest.mark.parametrize("bad, says", [
    ({"\ud800": 1.0}, "'\\ud800': a name or value with characters that are not Unicode text"),
    ({"a": "x\udc00"}, "'x\\udc00': a name or value with characters that are not Unicode text"),
    ({"a": 10 ** 400}, "feature a: " + "1" + "0" * 63 + "... (401 characters) is too large"),
    ({"a": list(range(10 ** 5))}, "feature a: [0, 1, 2, 3, 4,"),
])
def test_rows_the_package_cannot_send_are_refused_before_any_is_sent(client, bad, says):
    model = client.create_model("m", hash_bits=12)
    for send in (lambda: model.learn([{"a": 1.0}, bad], [1, 1]),
                 lambda: model.learn_one(bad, 1), lambda: model.predict_one(bad)):
        with pytest.raises(ValueError) as e:
            send()
        assert says in str(e.value) and len(str(e.value)) < 200, str(e.value)
    assert counters(model) == (0, 0, 0)


def test_long_input_in_a_message_is_shown_in_part(client):
    """A message repeats at most 64 bytes of a long input (core/quoted.h): a status of the whole
    would pass gRPC's limit on its size, and the client would see only that limit's error."""
    with pytest.raises(perceptrond.PerceptronError) as e:
        client.create_model("q", hash_bits=10, interactions=["q" * 200000])
    assert e.value.code.name == "INVALID_ARGUMENT", e.value
    assert '"' + "q" * 64 + '..." (200000 bytes) is not two namespace letters' in e.value.message
    model = client.create_model("c", dimension=2, classes=["a", "b"])
    with pytest.raises(ValueError, match=r"label 'z{63}\.\.\. \(100002 characters\)"):
        model.learn(np.eye(2), ["a", "z" * 100000])


def test_columns_by_name_issue_and_reveal_as_indices_do(client):
    rows, y = text_like(120, seed=3)
    by_name = client.create_model("cols-name", hash_bits=BITS, interactions=INTERACTIONS)
    by_index = client.create_model("cols-index", hash_bits=BITS, interactions=INTERACTIONS)
    issued = {}
    for model, x in ((by_name, rows), (by_index, hashed(rows))):
        with model.stream() as s:
            issued[model.id] = s.issue(x, batch_size=32)
            assert not issued[model.id].errors
            s.reveal(issued[model.id].ids, y)
    a, b = issued["cols-name"], issued["cols-index"]
    assert bits(a.scores).tolist() == bits(b.scores).tolist()
    assert list(a.ids) == list(b.ids)
    np.testing.assert_array_equal(bits(by_name.weights()), bits(by_index.weights()))
    assert counters(by_name) == counters(by_index)
    assert by_name.status().names.names > 0  # issued examples' names are recorded


def test_columns_by_name_refuse_a_malformed_batch_whole(client):
    model = client.create_model("cols", hash_bits=10)
    model.learn([{"a": 1.0}], [1])
    before = (bits(model.weights()).tolist(), counters(model))
    plain = client.create_model("plain-cols", 4)

    def send(target, **fields):
        columns = pb.Columns(labels=[1], row_ends=[1], **fields)
        request = pb.LearnRequest(model_id=target.id, columns=columns).SerializeToString()
        return list(client._learn(target.id, iter([request])))

    for fields, says in [
        (dict(strings=["a"], named_names=[1]), "named_names[0] = 1 is outside the 1 strings"),
        (dict(strings=["a"], named_names=[0], named_spaces=[3]), "named_spaces[0] = 3"),
        (dict(strings=["a"], named_names=[0], named_categories=[2]), "named_categories[0] = 2"),
        (dict(strings=["a"], named_names=[0, 0]), "2 named_names; the last row ends at 1"),
        (dict(strings=["a"], named_names=[0], named_values=[1.0, 2.0]), "2 named_values"),
        (dict(strings=["a"], named_names=[0], values=[1.0]), "not more than one"),
        (dict(text=b"ab", text_lengths=[1], named_names=[0]),
         "text_lengths add up to 1 bytes; the text is 2"),
        (dict(text=b"ab", text_lengths=[2, 1], named_names=[0]),
         "text_lengths add up to 3 bytes; the text is 2"),
        (dict(text=b"a\xff", text_lengths=[2], named_names=[0]), "the text is not valid UTF-8"),
        (dict(text="é".encode(), text_lengths=[1, 1], named_names=[0]),
         "string 1 of the text begins inside a UTF-8 character (byte 1)"),
        (dict(strings=["a"], text=b"a", text_lengths=[1], named_names=[0]),
         "as strings or as text, not both"),
        (dict(text=b"a", text_lengths=[1], named_names=[1]),
         "named_names[0] = 1 is outside the 1 strings"),
    ]:
        with pytest.raises(perceptrond.PerceptronError, match=re.escape(says)) as e:
            send(model, **fields)
        assert e.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(perceptrond.PerceptronError, match="rows by name for a model that takes"):
        send(plain, strings=["a"], named_names=[0])
    assert (bits(model.weights()).tolist(), counters(model)) == before
    # A bad feature refuses its row only, named as items name it.
    (response,) = send(model, strings=["", "b"], named_names=[0])
    assert [e.item for e in response.columns.errors] == [0]
    assert "the name is empty" in response.columns.errors[0].error.message
    assert (bits(model.weights()).tolist(), counters(model)) == before


def test_columns_table_as_strings_or_as_text_learns_the_same(client):
    # The batch's table as a string each (Columns.strings) or as one run of bytes cut at its
    # ends (Columns.text): bit for bit the same model, UTF-8 names, an empty string and a
    # categorical value among them.
    table = ["w1", "é", "ns", "", "colour", "红", "7"]
    names, spaces = [0, 1, 6, 4, 5, 0], [2, 3, 2, 3, 3, 2]
    categories, values = [0, 0, 0, 6, 0, 0], [1.5, -2.0, 1.0, 1.0, 3.0, 0.5]
    rows = dict(row_ends=[2, 4, 6], labels=[1, -1, 1], named_names=names,
                named_spaces=spaces, named_categories=categories, named_values=values)
    encoded = [t.encode() for t in table]
    lengths = [len(t) for t in encoded]
    models = []
    for kind, fields in [("strings", dict(strings=table)),
                         ("text", dict(text=b"".join(encoded), text_lengths=lengths))]:
        model = client.create_model(kind, hash_bits=12)
        request = pb.LearnRequest(model_id=model.id, columns=pb.Columns(**rows, **fields))
        for _ in range(3):
            (response,) = client._learn(model.id, iter([request.SerializeToString()]))
            assert not response.columns.errors
        models.append(model)
    a, b = models
    assert counters(a) == counters(b) and counters(a)[0] == 9
    assert bits(a.weights()).tolist() == bits(b.weights()).tolist()
    assert np.count_nonzero(a.weights()) > 0
    assert a.top_features(10) == b.top_features(10)


def test_names_need_a_hashed_model(client):
    model = client.create_model("plain", 4)
    with pytest.raises(perceptrond.PerceptronError, match="hash_bits"):
        model.learn_one({"age": 3.0}, 1)
    with pytest.raises(perceptrond.PerceptronError, match="hash_bits 25 is over"):
        client.create_model("big", hash_bits=25)
    with pytest.raises(perceptrond.PerceptronError, match="not two namespace letters"):
        client.create_model("q", hash_bits=8, interactions=["abc"])


def cli(server, *args):
    run = subprocess.run([os.environ["PERCEPTRON_CLI"], *args, "--progress=no",
                          "--server=" + server.target], capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def vw_line(x, label):
    """One example in Vowpal Wabbit's text format, features in the dict's order."""
    parts, current = [], None
    for key, value in x.items():
        space, name = key if isinstance(key, tuple) else ("", key)
        if space != current or not parts:
            parts.append("|" + (space if space else ""))
            current = space
        parts.append(f"{name}:{value}" if isinstance(value, str) else
                     name if value == 1.0 else f"{name}:{value!r}")
    parts = parts or ["|"]  # no feature
    return ("1" if label == 1 else "0") + " " + " ".join(parts).replace("| ", "| ", 1)


def json_line(x, label):
    """One example as a JSON line: a namespace's features as a nested object."""
    features = {}
    for key, value in x.items():
        if isinstance(key, tuple):
            features.setdefault(key[0], {})[key[1]] = value
        else:
            features[key] = value
    return json.dumps({"label": label, "features": features}, ensure_ascii=False)


def vw_and_json_lines_files(tmp_path, stem, rows, y):
    """The same examples as a VW file and a JSON lines file."""
    vw = tmp_path / f"{stem}.vw"
    vw.write_text("".join(vw_line(x, label) + "\n" for x, label in zip(rows, y)))
    jsonl = tmp_path / f"{stem}.jsonl"
    jsonl.write_text("".join(json_line(x, label) + "\n" for x, label in zip(rows, y)))
    return vw, jsonl


def test_vw_and_json_lines_files_through_the_cli_equal_the_dicts(client, server, tmp_path):
    rows, y = text_like(300, seed=11)
    for at in (0, 7, 150):  # examples of no feature ("1 |", "features": {}) too
        rows[at] = {}
    vw, jsonl = vw_and_json_lines_files(tmp_path, "text", rows, y)
    for name, path in (("vw", vw), ("jsonl", jsonl)):
        code, out = cli(server, "train", str(path), f"--model={name}", "--create",
                        "--hash_bits=18", "--interactions=ab")
        assert code == 0, out
    dicts = client.create_model("dicts", hash_bits=BITS, interactions=INTERACTIONS)
    dicts.learn(rows, y)
    for name in ("vw", "jsonl"):
        assert_learned_as(client.model(name), dicts)


def test_train_and_fit_create_hash_the_names_of_a_vw_or_json_lines_file_by_default(
        client, server, tmp_path):
    # With no --hash_bits, --dim or --feature_names_file, names are hashed into
    # 2^18 coordinates, Vowpal Wabbit's default, and the CLI says so.
    rows, y = text_like(120, seed=5)
    vw, jsonl = vw_and_json_lines_files(tmp_path, "plain", rows, y)
    for name, path in (("vw18", vw), ("jsonl18", jsonl)):
        code, out = cli(server, "train", str(path), f"--model={name}", "--create")
        assert code == 0, out
        assert "are names: hashed into 2^18 coordinates" in out, out
    dicts = client.create_model("dicts18", hash_bits=18)
    dicts.learn(rows, y)
    for name in ("vw18", "jsonl18"):
        m = client.model(name)
        assert m.info().config.hash_bits == 18, name
        assert_learned_as(m, dicts)
    code, out = cli(server, "fit", str(vw), "--model=fit18", "--create")
    assert code == 0 and "hashed into 2^18" in out, out
    assert client.model("fit18").info().config.hash_bits == 18
    # The same files gzipped: their format is the name's within (plain.vw.gz is VW).
    for path in (vw, jsonl):
        gz = tmp_path / (path.name + ".gz")
        gz.write_bytes(gzip.compress(path.read_bytes()))
        name = path.suffix[1:] + "gz"
        code, out = cli(server, "train", str(gz), f"--model={name}", "--create")
        assert code == 0 and "are names: hashed into 2^18 coordinates" in out, out
        assert_learned_as(client.model(name), dicts)
    # Labels of three classes: a multiclass model, its names hashed into 2^18
    # coordinates as a binary model's, as a dicts model of 18 bits learns them; its
    # certificate on (over the coordinates its rows use).
    classes = ["bird", "cat", "dog"]
    y3 = [classes[(i + (label == 1)) % 3] for i, label in enumerate(y)]
    three = tmp_path / "three.jsonl"
    three.write_text("".join(json_line(x, c) + "\n" for x, c in zip(rows, y3)))
    for verb, name in (("train", "three"), ("fit", "fit3")):
        code, out = cli(server, verb, str(three), f"--model={name}", "--create",
                        *(["--max_epochs=1"] if verb == "fit" else []))
        assert code == 0 and "hashed into 2^18 coordinates" in out, out
        assert "classes of " + name + ": bird,cat,dog" in out, out
        assert client.model(name).info().config.hash_bits == 18
    dicts3 = client.create_model("dicts3", hash_bits=18, classes=classes)
    dicts3.learn(rows, y3)
    for name in ("three", "fit3"):
        assert_learned_as(client.model(name), dicts3)
        assert settled(client.model(name), len(rows)).upper > 0, name
    # list and get say what each takes.
    code, out = cli(server, "list")
    assert code == 0 and "\nvw18\tclassic\thash_bits=18\n" in out, out
    assert "\nthree\tclassic\thash_bits=18, 3 classes\n" in out, out
    code, out = cli(server, "get", "three")
    assert code == 0, out
    assert "(classic, hash_bits=18, 3 classes)\nclasses        bird,cat,dog\n" in out, out
    assert "features       by name, hashed into 2^18 coordinates\n" in out, out
    # Asked for vectors (--dim), the names are refused as before, nothing created.
    code, out = cli(server, "train", str(vw), "--model=dim", "--create", "--dim=8")
    assert code != 0 and "plain.vw:1: the features are names" in out, out
    assert "dim" not in [m.model_id for m in client.list_models()]


TABLE = [("34", "paris", "red", "1.5", "1"), ("51", "lyon", "blue", "", "0"),
         ("27", "paris", "green", "-2", "1"), ("45", "nice", "red", "0.25", "0"),
         ("33", "lyon", "red", "3", "1"), ("62", "nice", "blue", "", "0")] * 20


def table_dicts():
    rows, y = [], []
    for age, city, colour, score, label in TABLE:
        x = {"age": float(age), "city": city, "colour": colour}
        if score:
            x["score"] = float(score)
        rows.append(x)
        y.append(1 if label == "1" else -1)
    return rows, y


def test_a_categorical_csv_and_a_vw_file_through_the_cli_equal_the_dicts(
        client, server, tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text("age,city,colour,score,label\n" +
                   "".join(",".join(r) + "\n" for r in TABLE))
    vw = tmp_path / "people.vw"
    vw.write_text("".join(
        f"{label} | age:{age} city:{city} colour:{colour}" + (f" score:{score}" if score else "")
        + "\n" for age, city, colour, score, label in TABLE))
    for name, path in (("csv", csv), ("vwt", vw)):
        code, out = cli(server, "train", str(path), f"--model={name}", "--create",
                        "--hash_bits=16", "--nonormalize")
        assert code == 0, out
    rows, y = table_dicts()
    dicts = client.create_model("dicts", hash_bits=16, normalize=False)
    dicts.learn(rows, y)
    for name in ("csv", "vwt"):
        assert_learned_as(client.model(name), dicts)
    # A categorical cell is the feature name=value with value 1, at VW's slot for "city:paris".
    slot = vw_hash.slot("", "city", 16, "paris")
    assert dicts.weights()[slot] != 0


def test_train_and_fit_create_hash_a_csv_with_categorical_cells_by_default(
        client, server, tmp_path):
    # A headed CSV whose cells are not all numbers is read by name, as a VW file
    # is: with no --hash_bits, --dim or --feature_names_file, into 2^18 coordinates.
    csv = tmp_path / "people.csv"
    csv.write_text("age,city,colour,score,label\n" +
                   "".join(",".join(r) + "\n" for r in TABLE))
    for verb, name in (("train", "csv18"), ("fit", "fit18")):
        code, out = cli(server, verb, str(csv), f"--model={name}", "--create",
                        *(["--max_epochs=1"] if verb == "fit" else []))
        assert code == 0, out
        assert ('the features of ' + str(csv) + ' are names (line 2: column 1 (city) "paris" '
                'is not a number)') in out, out
        assert "hashed into 2^18 coordinates" in out, out
        assert client.model(name).info().config.hash_bits == 18
    rows, y = table_dicts()
    dicts = client.create_model("dicts18", hash_bits=18)
    dicts.learn(rows, y)
    for name in ("csv18", "fit18"):
        assert_learned_as(client.model(name), dicts)
    # A CSV of numbers stays a model of vectors, its dimension the columns but the
    # label's; an empty cell alone does not make names (it is refused as before).
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("a,b,label\n1,2,1\n3,4,0\n")
    code, out = cli(server, "train", str(numbers), "--model=vectors", "--create")
    assert code == 0 and "are names" not in out, out
    config = client.model("vectors").info().config
    assert (config.hash_bits, config.dimension) == (0, 2)
    holes = tmp_path / "holes.csv"
    holes.write_text("a,b,label\n1,,1\n")
    code, out = cli(server, "train", str(holes), "--model=holes", "--create")
    assert code != 0 and 'holes.csv:2: column 1 (b) "" is not a number' in out, out
    assert "holes" not in [m.model_id for m in client.list_models()]


def test_the_cli_names_the_line_of_a_bad_vw_or_csv_line(client, server, tmp_path):
    cases = [("bad.vw", "1 | a b\n1 2 | c\n", "bad.vw:2: importance weight 2"),
             ("nolabel.vw", "1 | a\n| b\n", "nolabel.vw:2: no label"),
             ("nan.vw", "1 | a:nan\n", "nan.vw:1: feature a: value nan is not a finite number"),
             ("anon.vw", "1 | :3\n", "anon.vw:1: feature \":3\" has no name"),
             ("short.csv", "a,b,label\n1,x,1\n2,1\n", "short.csv:3: 2 columns; the header has 3"),
             ("bad.jsonl", '{"label": 1, "features": {"a": 1}}\n{"label": 1, "features": ',
              "bad.jsonl:2: not a JSON object"),
             ("list.jsonl", '{"label": 1, "features": {"a": [1, 2]}}\n',
              "list.jsonl:1: feature a: [1,2] is not a number, a string or a boolean")]
    for name, text, says in cases:
        path = tmp_path / name
        path.write_text(text)
        code, out = cli(server, "train", str(path), "--model=m", "--create", "--hash_bits=10")
        assert code != 0 and says in out, (name, out)
    # Names into a model that takes vectors: refused before anything is sent.
    client.create_model("plain", 4)
    path = tmp_path / "names.vw"
    path.write_text("1 | a b\n")
    code, out = cli(server, "train", str(path), "--model=plain")
    assert code != 0 and "names.vw:1: the features are names" in out, out
    assert client.model("plain").status().stats.examples == 0


def test_the_sklearn_estimator_takes_dicts_as_dictvectorizer_does(server):
    from perceptrond.sklearn import PerceptronClassifier
    rows, y = table_dicts()
    labels = np.where(np.array(y) == 1, "yes", "no")
    by_name = PerceptronClassifier(address=server.target, hash_bits=16, max_epochs=5)
    by_name.fit(rows, labels)
    indptr, indices, values = [0], [], []
    for x in rows:
        h = vw_hash.hash_example(vw_hash.triples(x), 16)
        indices.extend(sorted(h))
        values.extend(h[s] for s in sorted(h))
        indptr.append(len(indices))
    matrix = scipy.sparse.csr_matrix((values, indices, indptr), shape=(len(rows), 1 << 16))
    by_index = PerceptronClassifier(address=server.target, max_epochs=5).fit(matrix, labels)
    np.testing.assert_array_equal(bits(by_name.decision_function(rows)),
                                  bits(by_index.decision_function(matrix)))
    assert list(by_name.predict(rows[:6])) == list(by_index.predict(matrix[:6]))
    assert by_name.score(rows, labels) > 0.8
    by_name.delete_models()
    by_index.delete_models()
    # Three classes: one multiclass model, its names hashed into 2^18 coordinates by default
    # as for two classes, its certificate on.
    three = np.array(["no", "maybe", "yes"])[[(i + (label == 1)) % 3 for i, label in enumerate(y)]]
    for target, expect in ((labels, 18), (three, 18)):
        clf = PerceptronClassifier(address=server.target, max_epochs=2).fit(rows, target)
        (status,) = clf.status()
        assert clf._models()[0].info().config.hash_bits == expect
        assert status.stats.certificate.state != pb.Certificate.OFF, \
            status.stats.certificate.reason
        clf.delete_models()


def test_a_model_with_a_list_of_names_takes_exactly_those(client, server, tmp_path):
    names = ["age", "city=paris", "city=lyon", "city=nice", "colour=red", "colour=blue",
             "colour=green", "score"]
    listed = client.create_model("listed", feature_names=names, normalize=False)
    assert listed.info().config.dimension == len(names)
    rows, y = table_dicts()
    listed.learn(rows, y)
    # The same examples as dense vectors in the list's order.
    dense = np.zeros((len(rows), len(names)))
    for t, x in enumerate(rows):
        for key, value in x.items():
            dense[t, names.index(f"{key}={value}" if isinstance(value, str) else key)] += (
                1.0 if isinstance(value, str) else value)
    plain = client.create_model("plain", len(names), normalize=False)
    plain.learn(dense, y)
    np.testing.assert_array_equal(bits(listed.weights()), bits(plain.weights()))
    assert counters(listed) == counters(plain)
    top = listed.top_features(3)
    assert [t[1] for t in top] == sorted((t[1] for t in top), key=lambda v: -abs(v))
    assert all(t[2] in names + ["(bias)"] for t in top)
    # A name not in the list refuses its item only.
    result = listed.learn([{"age": 1.0}, {"height": 2.0}], [1, -1])
    assert [i for i, _ in result.errors] == [1]
    assert '"height" is not in the model\'s list of feature names' in result.errors[0][1].message
    # Through the CLI: a names file, a CSV by name, and weights --top with names.
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    csv = tmp_path / "people.csv"
    csv.write_text("age,city,colour,score,label\n" + "".join(",".join(r) + "\n" for r in TABLE))
    code, out = cli(server, "train", str(csv), "--model=cli-listed", "--create", "--nonormalize",
                    "--feature_names_file=" + str(tmp_path / "names.txt"))
    assert code == 0, out
    np.testing.assert_array_equal(bits(client.model("cli-listed").weights()),
                                  bits(plain.weights()))
    code, out = cli(server, "weights", "cli-listed", "--top=3")
    assert code == 0, out
    lines = out.strip().splitlines()
    assert len(lines) == 3
    for line, (i, w, name) in zip(lines, top):
        index, weight, label = line.split()
        assert (int(index), float(weight), label) == (i, w, name)
    with pytest.raises(perceptrond.PerceptronError, match="repeats name 0"):
        client.create_model("twice", feature_names=["a", "a"])
    with pytest.raises(perceptrond.PerceptronError, match="do not go together"):
        client.create_model("both", feature_names=["a"], hash_bits=4)


def expected_names(rows, bits, interactions=()):
    """The names a hashing model keeps on each slot, computed by the test from vw_hash.py: each
    feature's name as VW's audit writes it ("ns^name", "ns^name=value", "a^x*b^y"), in the order
    first seen, a name the same as one kept when its 32-bit hash is; a name whose top 8 bits equal
    those of one of its slot's first two names is not told apart (the documented blind spot)."""
    mask = (1 << bits) - 1
    slots, tags = {}, {}
    tag = lambda v: max(1, v >> 24)  # noqa: E731
    for x in rows:
        terms, letters = [], []
        for space, name, value in vw_hash.triples(x):
            if not isinstance(value, str) and value == 0:
                continue
            h = vw_hash.hashstring(name, vw_hash.hashstring(space, 0) if space else 0)
            key = f"{space}^{name}" if space else name
            if isinstance(value, str):
                h = vw_hash.hashstring(value, h)
                key += "=" + value
            terms.append((h, key))
            letters.append(space[0] if space else " ")
        singles = len(terms)
        for pair in interactions:
            first = [i for i in range(singles) if letters[i] == pair[0]]
            second = [i for i in range(singles) if letters[i] == pair[1]]
            for i in first:
                for j in second:
                    h = (((terms[i][0] & mask) * 16777619) & vw_hash.MASK32) ^ (terms[j][0] & mask)
                    terms.append((h, terms[i][1] + "*" + terms[j][1]))
        for h, key in terms:
            kept, seen = slots.setdefault(h & mask, []), tags.setdefault(h & mask, [])
            if tag(h) in seen or any(k == h for k, _ in kept):
                continue
            if len(seen) < 2:
                seen.append(tag(h))
            kept.append((h, key))
    return {s: [name for _, name in kept] for s, kept in slots.items()}


@pytest.mark.parametrize("bits_", [BITS, 7])
def test_a_hashed_model_reads_its_weights_by_name(client, server, bits_):
    rows, y = text_like(400)
    model = client.create_model(f"read{bits_}", hash_bits=bits_, interactions=INTERACTIONS)
    assert not model.learn(rows, y).errors
    expected = expected_names(rows, bits_, INTERACTIONS)
    info = model.status().names
    assert info.names == sum(len(v) for v in expected.values())
    assert info.collided_slots == sum(1 for v in expected.values() if len(v) > 1)
    assert info.unnamed_slots == 0 and 0 < info.bytes <= info.limit_bytes == 8 << 20
    assert info.tag_bytes == 2 << bits_
    if bits_ == 7:
        assert info.collided_slots > 30, "a small table collides"
    w = model.weights()
    heavy = sorted((i for i in range(len(w)) if w[i] != 0), key=lambda i: (-abs(w[i]), i))
    top = model.top_features(25)
    assert [i for i, _, _ in top] == heavy[:25]
    for i, weight, name in top:
        assert weight == w[i]
        if i == 1 << bits_:
            assert name == "(bias)"
        else:
            assert name.split(" | ") == expected[i], i
    code, out = cli(server, "weights", model.id, "--top=25")
    assert code == 0, out
    lines = out.strip().splitlines()
    assert lines[-1].startswith(f"# names kept: {info.names} ({info.collided_slots} slots")
    for line, (i, weight, name) in zip(lines, top):
        index, value, label = line.split(" ", 2)
        assert (int(index), float(value), label) == (i, weight, name)
    code, out = cli(server, "status", model.id)
    assert f"names          {info.names} kept, {info.collided_slots} slots" in out, out


def test_a_wide_models_comparator_comes_back_as_a_mapping_of_its_non_zeros(client):
    """certificate() gives a wide model's comparator as its non-zeros at their coordinates;
    create_model takes them as a mapping {coordinate: value} (binary, and multiclass with the
    coordinates counted across the classes), and the same rows then have the certificate's U
    as their bound."""
    rows, y = text_like(300)
    labels = ["a" if t > 0 else "bc"[i % 2] for i, t in enumerate(y)]
    for name, classes, targets in (("bin", None, y), ("three", ["a", "b", "c"], labels)):
        extra = {"classes": classes} if classes else {}
        model = client.create_model(name, hash_bits=17, **extra)
        assert not model.learn(rows, targets).errors
        c = settled(model, len(rows))
        answer = model.certificate()
        u = dict(zip(answer.comparator_indices, answer.comparator))
        assert len(u) == len(answer.comparator) > 0
        width = ((1 << 17) + 1) * len(classes or [0])
        again = client.create_model(name + "-u", hash_bits=17, gamma=answer.certificate.gamma,
                                    comparator=u, **extra)
        # The configuration gives a wide model's comparator back as its non-zeros.
        config = next(m.config for m in client.list_models() if m.model_id == again.id)
        assert len(config.comparator_indices) == len(config.comparator) <= width
        assert (dict(zip(config.comparator_indices, config.comparator))
                == {i: v for i, v in u.items() if v != 0})
        assert not again.learn(rows, targets).errors
        stats = again.status().stats
        assert stats.bound_available and stats.bound == pytest.approx(c.upper, rel=1e-9)
    # 2^24 coordinates: a comparator dense would take 128 MiB, more than a request's 64.
    big = client.create_model("big", hash_bits=24, gamma=0.1, comparator={3: 1.0, 1 << 24: -2.0})
    config = next(m.config for m in client.list_models() if m.model_id == big.id)
    assert (list(config.comparator_indices), list(config.comparator)) == ([3, 1 << 24], [1, -2])
    big.delete()
    # A coordinate past the model's (the server's check), one that is not an integer or not a
    # coordinate at all (before anything is sent): nothing is made.
    for bad, says, extra in (({(1 << 17) + 1: 1.0}, "coordinate 131073 is past the model's "
                              "131073 weight coordinates (0 to 131072)", {}),
                             ({3 * (1 << 17) + 3: 1.0}, "past the model's 393219 weight",
                              {"classes": ["a", "b", "c"]})):
        with pytest.raises(perceptrond.PerceptronError, match=re.escape(says)) as e:
            client.create_model("bad", hash_bits=17, gamma=0.1, comparator=bad, **extra)
        assert e.value.code.name == "INVALID_ARGUMENT"
    for bad, says in (({"7": 1.0}, "coordinate '7' is not an integer"),
                      ({True: 1.0}, "coordinate True is not an integer"),
                      ({-1: 1.0}, "coordinate -1 is not one of a model's")):
        with pytest.raises(ValueError, match=re.escape(says)):
            client.create_model("bad", hash_bits=17, gamma=0.1, comparator=bad)
    assert all(m.model_id not in ("bad", "big") for m in client.list_models())


def names_of(model):
    """The heaviest features' names and the name table's figures (its tags are allocated at the
    first name recorded, so they are left out)."""
    n = model.status().names
    return model.top_features(30), (n.names, n.collided_slots, n.unnamed_slots, n.bytes)


def test_named_models_survive_a_restart_and_an_export(tmp_path):
    data = str(tmp_path / "data")
    rows, y = table_dicts()
    first = Perceptrond(os.environ["PERCEPTROND"], "--durability=sync", data_dir=data)
    with perceptrond.Client(first.target) as c:
        hashed = c.create_model("hashed", hash_bits=12, interactions=["  "])
        listed = c.create_model("listed", feature_names=["age", "city=paris", "colour=red"])
        hashed.learn(rows[:60], y[:60])
        listed.learn([{"age": 2.0}, {"city": "paris"}], [1, -1])
        before = {m.id: (bits(m.weights()).tolist(), counters(m)) for m in (hashed, listed)}
        names_before = names_of(hashed)
        assert names_before[1][0] > 0
    assert first.stop() == 0
    second = Perceptrond(os.environ["PERCEPTROND"], "--durability=sync", data_dir=data)
    try:
        with perceptrond.Client(second.target) as c:
            for name in ("hashed", "listed"):
                m = c.model(name)
                assert (bits(m.weights()).tolist(), counters(m)) == before[name]
            # The names come back with the model (its store's journal and snapshots), and
            # travel with its export (as a shard move carries it).
            assert names_of(c.model("hashed")) == names_before
            copy = c.import_model(c.export_model("hashed"), "hashed-copy")
            assert names_of(copy) == names_before
            assert bits(copy.weights()).tolist() == before["hashed"][0]
            config = c.model("listed").info().config
            assert list(config.feature_names) == ["age", "city=paris", "colour=red"]
            assert list(c.model("hashed").info().config.interactions) == ["  "]
            c.model("hashed").learn(rows[60:], y[60:])
            fresh = c.create_model("fresh", hash_bits=12, interactions=["  "])
            fresh.learn(rows, y)
            assert bits(c.model("hashed").weights()).tolist() == bits(fresh.weights()).tolist()
    finally:
        assert second.stop() == 0
