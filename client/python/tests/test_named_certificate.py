"""The certificate of models of hashed names (docs/design.md sections 2.7 and 2.9) at 2^20 and
2^24 coordinates, binary and multiclass, against liblinear's solutions of the same problems over the
rows as the test hashes them (tests/support/vw_hash.py), and across a restart."""
import math
import os
import random
import subprocess

import numpy as np
import pytest

import perceptrond
import vw_hash
from perceptrond_process import Perceptrond, settled


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def wide_stream(n, seed=11):
    """n text-like examples over a vocabulary of 5,000 words and a categorical column, labels
    from a hidden rule with one in ten flipped: not separable."""
    rng = random.Random(seed)
    rows, labels = [], []
    for _ in range(n):
        x = {("t", f"w{rng.randrange(5000)}"): 1.0 for _ in range(rng.randint(3, 12))}
        x["source"] = rng.choice(["mail", "web", "phone", "shop"])
        score = sum(1 for k in x if isinstance(k, tuple) and int(k[1][1:]) < 2400) - 3
        y = 1 if score >= 0 else -1
        rows.append(x)
        labels.append(-y if rng.random() < 0.1 else y)
    return rows, labels


def prepared(rows, bits):
    """x^ of each row as the model prepares it (bias 1 at coordinate 2^bits, then normalized),
    as {coordinate: value}, hashed by the test alone."""
    out = []
    for x in rows:
        h = {s: v for s, v in vw_hash.hash_example(vw_hash.triples(x), bits).items() if v != 0}
        h[1 << bits] = 1.0
        norm = math.sqrt(sum(v * v for v in h.values()))
        out.append({s: v / norm for s, v in h.items()})
    return out


def run_liblinear(xs, labels, solver, c, tmp_path):
    """liblinear-train -s solver -B -1 -c c -e 1e-8 on rows xs ({coordinate: value}) with labels
    (their text), the coordinates renumbered 1..m in order: the coordinates used, their numbers
    and the lines of liblinear's model file."""
    used = sorted({s for x in xs for s in x})
    number = {s: k + 1 for k, s in enumerate(used)}
    data, model = tmp_path / f"s{solver}.svm", tmp_path / f"s{solver}.model"
    with open(data, "w") as f:
        for x, label in zip(xs, labels):
            cells = " ".join(f"{number[s]}:{x[s]!r}" for s in sorted(x))
            f.write(f"{label} {cells}\n")
    subprocess.run(["liblinear-train", "-q", "-s", solver, "-B", "-1", "-c", repr(c), "-e", "1e-8",
                    str(data), str(model)], check=True, stdout=subprocess.DEVNULL)
    return used, number, model.read_text().split("\n")


def liblinear_primal(xs, y, c, tmp_path):
    """P(w) = ||w||^2 / 2 + C sum max(0, 1 - y w.x) at liblinear's solution of the L1-loss SVC
    without a bias (liblinear-train -s 3 -B -1), the coordinates renumbered 1..m in order (the
    problem is the same over the coordinates the rows use)."""
    used, number, lines = run_liblinear(xs, [f"{label:+d}" for label in y], "3", c, tmp_path)
    first = int(next(line for line in lines if line.startswith("label")).split()[1])
    at = lines.index("w")
    w = np.array([float(v) for v in lines[at + 1:at + 1 + len(used)]])
    if first != 1:
        w = -w  # liblinear's w scores its first label
    hinge = 0.0
    for x, label in zip(xs, y):
        score = sum(w[number[s] - 1] * v for s, v in x.items())
        hinge += max(0.0, 1 - label * score)
    return w @ w / 2 + c * hinge


@pytest.mark.parametrize("bits_", [20, 24])
def test_certificate_of_a_wide_hashed_model_matches_liblinear(client, tmp_path, bits_):
    rows, y = wide_stream(1500)
    model = client.create_model(f"wide{bits_}", hash_bits=bits_)
    assert not model.learn(rows, y).errors
    c = settled(model, len(rows))
    stats = model.status().stats
    r2 = stats.radius ** 2
    xs = prepared(rows, bits_)
    assert r2 == pytest.approx(max(sum(v * v for v in x.values()) for x in xs), rel=1e-12)
    # P* = P*(C = 1/R^2): the certificate's L / (2 R^2) <= P* <= liblinear's primal value, and
    # U is within the tolerance of L (U - L <= 1e-3 U): so U / (2 R^2) is within 1e-3 of
    # liblinear's value, from above or (liblinear stopping short of P*) below.
    peer = liblinear_primal(xs, y, 1 / r2, tmp_path)
    upper, lower = c.upper / (2 * r2), c.lower / (2 * r2)
    assert lower <= peer * (1 + 1e-12)
    assert abs(upper - peer) <= 1e-3 * max(upper, peer)
    assert c.lower <= c.upper and c.upper >= stats.updates
    # The comparator comes as its non-zeros at their coordinates: a unit vector over the
    # coordinates the rows use, whose bound recomputed here is U.
    answer = model.certificate()
    u = dict(zip(answer.comparator_indices, answer.comparator))
    assert len(u) == len(answer.comparator) > 0
    assert set(u) <= {s for x in xs for s in x}
    assert math.fsum(v * v for v in u.values()) == pytest.approx(1, rel=1e-9)
    gamma = answer.certificate.gamma
    td = math.fsum(max(0.0, gamma - t * sum(u.get(s, 0.0) * v for s, v in x.items()))
                   for x, t in zip(xs, y))
    assert r2 / gamma ** 2 + 2 * td / gamma == pytest.approx(answer.certificate.upper, rel=1e-9)


def liblinear_crammer_singer_primal(xs, y, k, c, tmp_path):
    """P(V) = ||V||_F^2 / 2 + C sum max(0, max_{r != y} 1 - (v_y - v_r).x) at liblinear's
    solution of the Crammer-Singer multiclass SVM without a bias (liblinear-train -s 4 -B -1),
    the coordinates renumbered 1..m in order."""
    used, number, lines = run_liblinear(xs, [str(label) for label in y], "4", c, tmp_path)
    labels = [int(v) for v in next(line for line in lines if line.startswith("label ")).split()[1:]]
    at = lines.index("w") + 1
    v = np.zeros((k, len(used)))
    for i in range(len(used)):
        for j, value in enumerate(lines[at + i].split()):
            v[labels[j], i] = float(value)
    hinge = 0.0
    for x, label in zip(xs, y):
        scores = [sum(v[r, number[s] - 1] * value for s, value in x.items()) for r in range(k)]
        hinge += max(0.0, max(1 - (scores[label] - scores[r]) for r in range(k) if r != label))
    return (v * v).sum() / 2 + c * hinge


def test_certificate_of_a_wide_multiclass_model_matches_liblinear(client, tmp_path):
    """Three classes hashed into 2^20 coordinates: the multiclass certificate on, U / (2 R_K^2)
    (R_K^2 = 2 R^2) within 1e-3 of liblinear's Crammer-Singer primal, the comparator's k
    vectors as non-zeros at coordinate r W + i of class r."""
    bits_ = 20
    rows, y = wide_stream(1200, seed=3)
    classes = ["mail", "web", "phone"]
    # The class: the hidden rule's side, and among the positive ones the source's parity.
    y3 = [0 if t < 0 else 1 + (x["source"] in ("web", "shop")) for x, t in zip(rows, y)]
    model = client.create_model("wide3", hash_bits=bits_, classes=classes)
    assert not model.learn(rows, [classes[t] for t in y3]).errors
    c = settled(model, len(rows))
    stats = model.status().stats
    rk2 = 2 * stats.radius ** 2
    xs = prepared(rows, bits_)
    peer = liblinear_crammer_singer_primal(xs, y3, 3, 1 / rk2, tmp_path)
    upper, lower = c.upper / (2 * rk2), c.lower / (2 * rk2)
    assert lower <= peer * (1 + 1e-12)
    assert abs(upper - peer) <= 1e-3 * max(upper, peer)
    assert c.lower <= c.upper and c.upper >= stats.updates
    answer = model.certificate()
    w = (1 << bits_) + 1
    assert len(answer.comparator_indices) == len(answer.comparator) > 0
    u = [{} for _ in classes]
    for index, value in zip(answer.comparator_indices, answer.comparator):
        u[index // w][index % w] = value
    assert set(u[0]) == set(u[1]) == set(u[2]) <= {s for x in xs for s in x}
    assert math.fsum(v * v for ur in u for v in ur.values()) == pytest.approx(1, rel=1e-9)
    gamma = answer.certificate.gamma
    td = 0.0
    for x, t in zip(xs, y3):
        score = [sum(ur.get(s, 0.0) * v for s, v in x.items()) for ur in u]
        td += max(0.0, gamma - (score[t] - max(score[r] for r in range(3) if r != t)))
    assert rk2 / gamma ** 2 + 2 * td / gamma == pytest.approx(answer.certificate.upper, rel=1e-9)


def test_certificate_of_a_wide_model_survives_a_restart_bit_for_bit(tmp_path):
    """A wide binary model and a wide multiclass one (hash_bits 20) keep their certificates
    through a restart, bit for bit, and go on keeping."""
    data = str(tmp_path / "data")
    rows, y = wide_stream(600, seed=5)
    classes = ["a", "b", "c"]
    y3 = [classes[0] if t < 0 else classes[1 + (x["source"] == "web")] for x, t in zip(rows, y)]
    labels = {"wide": y, "wide3": y3}
    first = Perceptrond(os.environ["PERCEPTROND"], "--durability=sync", data_dir=data)
    before = {}
    with perceptrond.Client(first.target) as c:
        c.create_model("wide", hash_bits=20)
        c.create_model("wide3", hash_bits=20, classes=classes)
        for name, target in labels.items():
            model = c.model(name)
            model.learn(rows[:500], target[:500])
            settled(model, 500)
            before[name] = model.certificate()
    assert first.stop() == 0
    second = Perceptrond(os.environ["PERCEPTROND"], "--durability=sync", data_dir=data)
    try:
        with perceptrond.Client(second.target) as c:
            for name, target in labels.items():
                model = c.model(name)
                after = model.certificate()
                was = before[name]
                assert after.certificate.state == was.certificate.state, name
                for field in ("upper", "lower", "gamma", "td_gamma", "examples", "solved"):
                    assert getattr(after.certificate, field) == getattr(was.certificate, field)
                assert list(after.comparator_indices) == list(was.comparator_indices)
                assert bits(after.comparator).tolist() == bits(was.comparator).tolist()
                # It goes on keeping: the rows came back with it.
                model.learn(rows[500:], target[500:])
                assert settled(model, 600).kept == 600, name
    finally:
        assert second.stop() == 0
