"""A perceptrond process for the Python tests (tests/e2e, client/python/tests) and benchmarks:
started on free loopback ports (read from its first two lines, so no sleeping), with a temporary
data directory, stopped with SIGTERM and required to exit 0. Also a synthetic stream, the
generated gRPC stubs, and `setting`, which reads what CTest passes in the environment."""
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request


def setting(name):
    """A value CTest sets in the environment (tests/e2e/CMakeLists.txt): PERCEPTROND (the
    server binary), PERCEPTRON_CLI, PERCEPTRON_STUBS (the generated Python stubs),
    PERCEPTRON_BREAST_CANCER_CSV, PERCEPTRON_DEPLOY (deploy/), PERCEPTRON_OUTPUT (a directory
    for what a test leaves behind)."""
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the test through ctest, or set it")
    return value


def import_stubs(stubs_dir):
    sys.path.insert(0, stubs_dir)
    import grpc  # noqa: F401  (Debian's python3-grpcio)
    from perceptron.v1 import perceptron_pb2, perceptron_pb2_grpc
    return perceptron_pb2, perceptron_pb2_grpc


class ServerTest(unittest.TestCase):
    """Each test on its own perceptrond with no data on disk, and a gRPC stub to it
    (self.server, self.channel, self.stub). A test module sets `binary` (the perceptrond path)
    and `stubs` (the generated perceptron_pb2_grpc module) on its subclass."""
    binary = None
    stubs = None

    def setUp(self):
        import grpc
        self.server = Perceptrond(self.binary, "--durability=none")
        self.channel = grpc.insecure_channel(self.server.target)
        self.stub = self.stubs.PerceptronServiceStub(self.channel)

    def tearDown(self):
        self.channel.close()
        self.assertEqual(self.server.stop(), 0, "perceptrond did not exit cleanly")


class Perceptrond:
    def __init__(self, binary, *flags, data_dir=None, env=None):
        """With `data_dir`, the server uses (and leaves) that data directory; by default a new
        temporary one, removed by stop(). `env`: variables added to the server's environment."""
        self.dir = tempfile.TemporaryDirectory(prefix="perceptrond-")
        self.stderr = open(os.path.join(self.dir.name, "stderr"), "w+")
        self.data_dir = data_dir or self.dir.name + "/data"
        self.proc = subprocess.Popen(
            [binary, "--port=0", "--http_port=0", "--data_dir=" + self.data_dir, *flags],
            stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0,
            env=None if env is None else {**os.environ, **env})
        self._pending = b""
        self.port = self._port("listening on")
        line = self._readline()
        self.http_port = self._port_of(line, "http on", "https on")
        self.target = "127.0.0.1:%d" % self.port
        self.http = "%s://127.0.0.1:%d" % (
            "https" if "https on" in line else "http", self.http_port)

    def _readline(self):
        """A line of the server's output, waiting at most 60 s for it."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], 60)
            if not ready:
                raise RuntimeError("perceptrond printed nothing within 60 s")
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def _port(self, marker):
        return self._port_of(self._readline(), marker)

    def _port_of(self, line, *markers):
        if not any(m in line for m in markers):
            raise RuntimeError("unexpected line from perceptrond: %r; stderr: %s"
                               % (line, self.stderr_text()))
        return int(line.rsplit(":", 1)[1])

    def stderr_text(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return f.read()

    def get(self, path, token=None, context=None):
        """(status, content type, body) of GET path on the HTTP port; `context`: the
        ssl.SSLContext for HTTPS."""
        request = urllib.request.Request(self.http + path)
        if token:
            request.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read().decode()

    def stop(self):
        """SIGTERM; the exit code (0 for a clean shutdown)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        if code != 0:
            # What the server said about it (a sanitizer's report, say) goes into the test's log.
            sys.stdout.write("perceptrond exited %d; its stderr:\n%s\n" % (code, self.stderr_text()))
            sys.stdout.flush()
        self.proc.stdout.close()
        self.stderr.close()
        self.dir.cleanup()
        return code


class Stream:
    """Labeled examples in d dimensions, separable by the unit vector `u` with margin `gamma`
    (after normalization, without bias), with a fraction `noise` of labels flipped."""

    def __init__(self, d, gamma=0.05, noise=0.02, seed=1):
        self.rng = random.Random(seed)
        u = [self.rng.gauss(0, 1) for _ in range(d)]
        norm = sum(v * v for v in u) ** 0.5
        self.u = [v / norm for v in u]
        self.d, self.gamma, self.noise = d, gamma, noise

    def next(self):
        while True:
            x = [self.rng.gauss(0, 1) for _ in range(self.d)]
            n = sum(v * v for v in x) ** 0.5
            s = sum(a * b for a, b in zip(self.u, x)) / n
            if abs(s) >= self.gamma:
                break
        y = 1 if s > 0 else -1
        if self.rng.random() < self.noise:
            y = -y
        return x, y


def learn(pb, stub, model_id, examples, batch=64):
    """Streams labeled examples through one Learn stream; the responses."""
    def requests():
        for i in range(0, len(examples), batch):
            r = pb.LearnRequest(model_id=model_id)
            for x, y in examples[i:i + batch]:
                item = r.items.add()
                item.labeled.features.dense.values.extend(x)
                item.labeled.label = y
            yield r
    return list(stub.Learn(requests()))


def settled(model, n):
    """The certificate of `model` (the Python package's Model) once a converged solution covers
    all n examples."""
    end = time.monotonic() + 120
    while True:
        c = model.status().stats.certificate
        if c.available and c.converged and c.solved == c.examples == n:
            return c
        assert time.monotonic() < end, f"the certificate did not settle: {c}"
        time.sleep(0.01)  # a poll's pause
