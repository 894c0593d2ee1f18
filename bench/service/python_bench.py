"""The Python client's rate (docs/design.md section 7, issue 15's target): the same labeled
examples (a numpy array, d=20; N rows, 10^6 if not given) learned by two models of one server,
one through the perceptrond package (columnar batches built from the array, the package's
default of about 2 MiB of values: 8,192 rows at d=20), one through per-item LearnRequests built
from the same array with the generated protobuf classes, as the Python client did before columns
(in batches of 64, its default then). One Learn stream each, the messages built while streaming
(what a client pays either way). Checks that both models end with the same weights, bit for bit;
prints "items EX_PER_S" and "columns EX_PER_S".

Then rows by name (N/5 rows: 16 numeric columns and 4 categorical ones of 10 values each, hash_bits
18), learned by two more models: as a list of dicts (one a row, as River's and DictVectorizer's
users hold them) and as the pandas DataFrame they come from, both made before timing; the same
check; prints "dicts EX_PER_S" and "frame EX_PER_S".

    PYTHONPATH=client/python:BUILD/python /usr/bin/python3 python_bench.py HOST:PORT [N]
"""
import sys
import time

import numpy as np
import pandas as pd
import perceptrond
from perceptron.v1 import perceptron_pb2 as pb
from perceptron.v1 import perceptron_pb2_grpc as pb_grpc

ITEM_BATCH = 64  # the batch of the first Python client, before columns
DIMENSION = 20


def per_item_requests(model_id, x, y):
    for start in range(0, len(y), ITEM_BATCH):
        request = pb.LearnRequest(model_id=model_id if start == 0 else "")
        for row, label in zip(x[start:start + ITEM_BATCH], y[start:start + ITEM_BATCH]):
            item = request.items.add()
            item.labeled.features.dense.values.extend(row.tolist())
            item.labeled.label = int(label)
        yield request


def main():
    address = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, DIMENSION))
    y = np.where(x @ rng.standard_normal(DIMENSION) >= 0, 1, -1)
    client = perceptrond.Client(address)
    items = client.create_model("python-items", dimension=DIMENSION)
    columns = client.create_model("python-columns", dimension=DIMENSION)

    stub = pb_grpc.PerceptronServiceStub(client._channel)
    start = time.perf_counter()
    answered = 0
    for response in stub.Learn(per_item_requests(items.id, x, y)):
        answered += len(response.results)
    items_seconds = time.perf_counter() - start
    if answered != n:
        sys.exit(f"python_bench: {answered} of {n} per-item examples answered")

    start = time.perf_counter()
    result = columns.learn(x, y)
    columns_seconds = time.perf_counter() - start
    if len(result.scores) != n or len(result.errors) != 0:
        sys.exit(f"python_bench: the columnar learn answered {len(result.scores)} of {n}")

    a, b = items.weights(), columns.weights()
    if a.tobytes() != b.tobytes():
        sys.exit("python_bench: the two models' weights differ")
    print(f"items {n / items_seconds:.1f}")
    print(f"columns {n / columns_seconds:.1f}", flush=True)

    m = n // 5
    table = {f"n{j}": x[:m, j] for j in range(16)}
    for j in range(4):
        table[f"c{j}"] = np.array([f"v{k}" for k in range(10)])[rng.integers(0, 10, m)]
    frame = pd.DataFrame(table)
    dicts = frame.to_dict("records")
    rates = {}
    by_name = {}
    for kind, rows in (("dicts", dicts), ("frame", frame)):
        by_name[kind] = client.create_model(f"python-{kind}", hash_bits=18)
        start = time.perf_counter()
        result = by_name[kind].learn(rows, y[:m])
        rates[kind] = m / (time.perf_counter() - start)
        if len(result.scores) != m or len(result.errors) != 0:
            sys.exit(f"python_bench: {kind} answered {len(result.scores)} of {m}")
    if by_name["dicts"].weights().tobytes() != by_name["frame"].weights().tobytes():
        sys.exit("python_bench: the dicts' and the frame's weights differ")
    print(f"dicts {rates['dicts']:.1f}")
    print(f"frame {rates['frame']:.1f}")


if __name__ == "__main__":
    main()
