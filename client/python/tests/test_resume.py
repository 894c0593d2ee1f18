"""Resuming a broken Learn stream when a request goes missing on the way: learn(retry_for=...)
and `perceptron train --retry_for` through a proxy of the test's own that loses one request of
the first Learn stream, against a real perceptrond (the `server` fixture)."""
import logging
import os
import subprocess
import threading
from concurrent import futures

import grpc
import numpy as np
import pytest

import perceptrond

SERVICE = "/perceptron.v1.PerceptronService/"
# Calls that stream answers; every other call but Learn is unary.
ANSWER_STREAMS = {"WatchStatus", "GetWeightsChunks", "ExportModelChunks"}


class LossyProxy:
    """Forwards every call to `target` as it is, bytes for bytes, but for one request: the
    `lose`-th (from 0) of the first Learn stream, which it drops (`lost` then holds its size
    in bytes). A proxy or transport that loses a message is what learn's resumption must
    survive: without a condition on each request, the server would learn the requests after
    the lost one out of place and answer each, with nothing said."""

    def __init__(self, target: str, lose: int = 1):
        self.upstream = grpc.insecure_channel(target)
        self.lose = lose
        self.lost = []
        self.learn_streams = 0
        self.mu = threading.Lock()
        proxy = self

        class Handler(grpc.GenericRpcHandler):
            def service(self, details):
                name = details.method[len(SERVICE):]
                if not details.method.startswith(SERVICE):
                    return None
                if name == "Learn":
                    return grpc.stream_stream_rpc_method_handler(proxy.learn)
                if name in ANSWER_STREAMS:
                    return grpc.unary_stream_rpc_method_handler(
                        lambda request, context: proxy.forward(
                            proxy.upstream.unary_stream(details.method), request, context))
                return grpc.unary_unary_rpc_method_handler(
                    lambda request, context: proxy.forward(
                        proxy.upstream.unary_unary(details.method), request, context))

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self.server.add_generic_rpc_handlers((Handler(),))
        self.target = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    @staticmethod
    def metadata(context):
        return [(k, v) for k, v in context.invocation_metadata()
                if not k.startswith((":", "grpc-")) and k != "user-agent"]

    def forward(self, call, request, context):
        try:
            return call(request, metadata=self.metadata(context))
        except grpc.RpcError as e:
            context.abort(e.code(), e.details())

    def learn(self, requests, context):
        with self.mu:
            first = self.learn_streams == 0
            self.learn_streams += 1

        def passed():
            for k, request in enumerate(requests):
                if first and k == self.lose:
                    self.lost.append(len(request))
                    continue
                yield request

        try:
            yield from self.upstream.stream_stream(SERVICE + "Learn")(
                passed(), metadata=self.metadata(context))
        except grpc.RpcError as e:
            context.abort(e.code(), e.details())

    def stop(self):
        self.server.stop(None)
        self.upstream.close()


def data(n=5000, d=8, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    return x, np.where(x @ rng.standard_normal(d) > 0, 1, -1)


def bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64).tolist()


@pytest.mark.parametrize("lose", [0, 1, 19])
def test_learn_resumes_when_a_request_is_lost_on_the_way(server, client, caplog, lose):
    """A request lost on the way (the first, the second, the last of 20) ends the stream at
    the next one (its if_examples is not the model's count: nothing of it applied), or leaves
    it unanswered, and learn resumes after what the model holds: the model is the one the
    data makes once, bit for bit, and every answer is that model's."""
    x, y = data()
    once = client.create_model("once", dimension=8).learn(x, y, batch_size=256)
    client.create_model("m", dimension=8)
    proxy = LossyProxy(server.target, lose=lose)
    try:
        with perceptrond.Client(proxy.target) as c, caplog.at_level(logging.INFO, "perceptrond"):
            got = c.model("m").learn(x, y, batch_size=256, retry_for=30)
    finally:
        proxy.stop()
    assert len(proxy.lost) == 1 and proxy.learn_streams >= 2, (proxy.lost, proxy.learn_streams)
    said = [r.getMessage() for r in caplog.records if "resuming at example" in r.getMessage()]
    assert len(said) == 1, said
    if lose < 19:  # the next request's count is not the model's
        assert "FAILED_PRECONDITION" in said[0] and "if_examples" in said[0], said
    else:  # the last one's answer never comes
        assert "ended without an error after 4864 of 5000" in said[0], said
    held = lose * 256
    assert f"the model holds {held} of them: resuming at example {held}" in said[0], said
    assert got.unanswered == []
    assert bits(got.scores) == bits(once.scores)
    assert got.predicted.tolist() == once.predicted.tolist()
    assert client.model("m").status().stats.examples == len(y)
    assert bits(client.model("m").weights()) == bits(client.model("once").weights())


@pytest.mark.parametrize("lose,source", [(0, "file"), (1, "stdin")])
def test_train_resumes_when_a_request_is_lost_on_the_way(server, client, tmp_path, lose, source):
    """`perceptron train --retry_for` as learn(retry_for=...), through its C++ session: a lost
    request ends the stream at the next one and the data goes on after what the model holds,
    from a file or from standard input (read once: the session keeps what is unanswered)."""
    x, y = data(n=3000, seed=4)
    path = tmp_path / "data.svm"
    path.write_text("".join(
        f"{'+1' if label > 0 else '-1'} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row))
        + "\n" for row, label in zip(x, y)))
    cli = os.environ["PERCEPTRON_CLI"]

    def train(target, model, *flags, stdin=False):
        run = subprocess.run([cli, "--server=" + target, "train", "-" if stdin else str(path),
                              "--model=" + model, "--batch=100", "--in_flight=4",
                              "--progress=no", *flags],
                             input=path.read_text() if stdin else None,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return run

    train(server.target, "once", "--create", "--dim=8")
    client.create_model("m", dimension=8)
    proxy = LossyProxy(server.target, lose=lose)
    try:
        run = train(proxy.target, "m", "--retry_for=30s", stdin=source == "stdin")
    finally:
        proxy.stop()
    assert len(proxy.lost) == 1 and proxy.learn_streams >= 2, (proxy.lost, run.stderr)
    assert run.stderr.count("resuming at example") == 1, run.stderr
    assert "(FAILED_PRECONDITION: " in run.stderr and "if_examples" in run.stderr, run.stderr
    held = lose * 100
    # Standard input's examples are not counted before they are sent.
    of = " of 3000" if source == "file" else ""
    assert f"m holds {held}: resuming at example {held}{of}\n" in run.stderr, run.stderr
    assert "trained m on " in run.stdout and ": 3000 examples in" in run.stdout, run.stdout
    assert client.model("m").status().stats.examples == len(y)
    assert bits(client.model("m").weights()) == bits(client.model("once").weights())


def test_a_multiclass_learn_resumes_with_its_class_names(server, client):
    """learn(retry_for=...) of a multiclass model through a lost request: the model is the one
    the data makes once, and the result names the classes issued as learn without it does."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3000, 6))
    y = np.array(["a", "b", "c"])[np.argmax(x[:, :3], axis=1)]
    once = client.create_model("once", dimension=6, classes=["a", "b", "c"]).learn(
        x, y, batch_size=200)
    client.create_model("m", dimension=6, classes=["a", "b", "c"])
    proxy = LossyProxy(server.target, lose=1)
    try:
        with perceptrond.Client(proxy.target) as c:
            got = c.model("m").learn(x, y, batch_size=200, retry_for=30)
    finally:
        proxy.stop()
    assert len(proxy.lost) == 1 and proxy.learn_streams >= 2, (proxy.lost, proxy.learn_streams)
    assert got.unanswered == [] and not got.errors
    assert set(got.predicted) == {"a", "b", "c"}
    assert got.predicted.tolist() == once.predicted.tolist()
    assert bits(got.scores) == bits(once.scores)
    assert bits(client.model("m").weights()) == bits(client.model("once").weights())
