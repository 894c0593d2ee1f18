"""Shards behind a real proxy (docs/design.md section 10): three perceptrond shards behind Debian's
nginx configured by deploy/nginx/nginx.conf (its upstream servers and listen address replaced by
the test's: the shards' loopback ports, a unix socket), driven by the perceptrond Python package,
which names the model in the x-perceptron-model header of every call.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
import numpy as np

import perceptrond
import perceptrond_process as pp
from perceptron.v1 import perceptron_pb2 as pb, perceptron_pb2_grpc as pb_grpc

PERCEPTROND = pp.setting("PERCEPTROND")
CLI = pp.setting("PERCEPTRON_CLI")
DEPLOY = pp.setting("PERCEPTRON_DEPLOY")

SHARDS = 3


class Nginx:
    """nginx with deploy/nginx/nginx.conf, its shards and listen address replaced."""

    def __init__(self, shard_targets):
        self.dir = tempfile.TemporaryDirectory(prefix="nginx-")
        self.socket = os.path.join(self.dir.name, "grpc.sock")
        self.conf = os.path.join(self.dir.name, "nginx.conf")
        self.write_conf(shard_targets)
        self.log = os.path.join(self.dir.name, "error.log")
        self.proc = subprocess.Popen(
            ["nginx", "-p", self.dir.name, "-c", self.conf, "-g",
             f"daemon off; pid {self.dir.name}/nginx.pid; error_log {self.log} warn;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.target = "unix:" + self.socket
        # Ready when a connection is accepted: nginx binds the socket (the file appears)
        # before it listens on it.
        end = time.monotonic() + 60
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(self.socket)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise AssertionError("nginx did not start: " + open(self.log).read())
                time.sleep(0.05)  # a poll's pause

    def write_conf(self, shard_targets):
        with open(os.path.join(DEPLOY, "nginx", "nginx.conf")) as f:
            conf = f.read()
        servers = re.findall(r"^\s*server perceptrond-\d\.perceptrond:50051 max_fails=0;\n", conf,
                             re.M)
        assert len(servers) == SHARDS, servers
        conf = conf.replace("".join(servers), "".join(
            f"    server {target} max_fails=0;\n" for target in shard_targets))
        assert "listen 50051 http2;" in conf
        conf = conf.replace("listen 50051 http2;", f"listen unix:{self.socket} http2;")
        for temp in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            conf = conf.replace("http {", f"http {{\n  {temp}_temp_path {self.dir.name}/{temp};", 1)
        with open(self.conf, "w") as f:
            f.write(conf)

    def reload(self, shard_targets):
        """Routes by `shard_targets` from now on: the configuration rewritten, then SIGHUP (new
        workers take new connections; the old ones finish their calls and go)."""
        self.write_conf(shard_targets)
        self.proc.send_signal(signal.SIGHUP)

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        self.proc.wait(timeout=60)
        self.dir.cleanup()


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def server_id(target, model_id=None):
    """The instance id of the server at `target` or, given a model id, of the one that answers
    for it there (through a proxy: the shard the proxy routes it to), from the trailing
    metadata x-perceptron-server of ListModels or GetModel."""
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.PerceptronServiceStub(channel)
        try:
            if model_id is None:
                _, call = stub.ListModels.with_call(pb.ListModelsRequest(page_size=1), timeout=30)
            else:
                _, call = stub.GetModel.with_call(pb.GetModelRequest(model_id=model_id),
                                                  metadata=[("x-perceptron-model", model_id)],
                                                  timeout=30)
        except grpc.RpcError as e:  # NOT_FOUND, or UNAVAILABLE for a model moved away
            assert e.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE), e
            call = e
        return dict(call.trailing_metadata())["x-perceptron-server"]


class ShardsTest(unittest.TestCase):
    def setUp(self):
        self.data = tempfile.TemporaryDirectory(prefix="shards-")
        self.shards = [pp.Perceptrond(PERCEPTROND, "--durability=sync",
                                      data_dir=os.path.join(self.data.name, str(i)))
                       for i in range(SHARDS)]
        self.nginx = Nginx([s.target for s in self.shards])
        self.proxy = perceptrond.Client(self.nginx.target, timeout=30)
        self.proxy.health()

    def tearDown(self):
        self.proxy.close()
        self.nginx.stop()
        for s in self.shards:
            if s is not None:
                self.assertEqual(s.stop(), 0)
        self.data.cleanup()

    def settle(self, ids):
        """Waits until the certificate of every model in `ids` has settled: its refresher goes on
        installing solutions after the last batch until one converges, and each install changes
        the model's export."""
        end = time.monotonic() + 120
        for m in ids:
            while True:
                c = self.proxy.model(m).status().stats.certificate
                if c.state in (pb.Certificate.OFF, pb.Certificate.FROZEN) or (
                        c.state == pb.Certificate.KEEPING and c.converged
                        and c.solved == c.examples):
                    break
                self.assertLess(time.monotonic(), end, f"{m}'s certificate did not settle: {c}")
                time.sleep(0.01)  # a poll's pause

    def assertSameBits(self, got, want, msg=None):
        """got and want equal bit for bit; else where they differ, in a few lines (unittest's
        diff of two long lists takes minutes)."""
        got, want = bits(got), bits(want)
        if got.shape == want.shape and np.array_equal(got, want):
            return
        if got.shape != want.shape:
            self.fail(f"{got.shape[0]} values, {want.shape[0]} expected" +
                      (f": {msg}" if msg else ""))
        at = np.flatnonzero(got != want)
        show = ", ".join(f"[{i}] {got[i].view(np.float64)!r} != {want[i].view(np.float64)!r}"
                         for i in at[:8])
        self.fail(f"{len(at)} of {len(got)} values differ, the first at {at[0]}: {show}" +
                  (f": {msg}" if msg else ""))

    def where(self, model_id, result, progress):
        """What a failed count check reports: the last answer's count, the count on each shard
        holding `model_id` (asked directly), and the rebalance's progress."""
        held = {}
        for i, s in enumerate(self.shards):
            if s is None:
                continue
            try:
                with perceptrond.Client(s.target) as c:
                    held[i] = c.model(model_id).status().stats.examples
            except perceptrond.PerceptronError as e:
                held[i] = f"{e.code.name}: {e.message}"
        return (f"the last answer's count {result.stats.examples}; on each shard: {held}; "
                "rebalance:\n" + "".join(progress))

    def owners(self):
        """{model id: [shard indexes holding it]} asking each shard directly."""
        out = {}
        for i, s in enumerate(self.shards):
            with perceptrond.Client(s.target) as c:
                for m in c.list_models():
                    out.setdefault(m.model_id, []).append(i)
        return out

    def test_models_spread_and_behave_as_on_one_server(self):
        rng = np.random.default_rng(1)
        ids = [f"model-{k:02d}" for k in range(60)]
        for model_id in ids:
            self.proxy.create_model(model_id, dimension=5)
        owners = self.owners()
        self.assertEqual(sorted(owners), ids)
        self.assertTrue(all(len(o) == 1 for o in owners.values()), "a model on two shards")
        per_shard = [sum(o == [i] for o in owners.values()) for i in range(SHARDS)]
        self.assertTrue(all(n > 0 for n in per_shard), per_shard)
        # The client libraries and the CLI merge the shards' lists.
        targets = [s.target for s in self.shards]
        placed = perceptrond.list_models_across(targets)
        self.assertEqual([(a, m.model_id) for a, m in placed],
                         [(targets[owners[i][0]], i) for i in ids])
        run = subprocess.run([CLI, "list", "--shards=" + ",".join(targets)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual([tuple(line.split("\t")[::3]) for line in run.stdout.splitlines()],
                         [(i, targets[owners[i][0]]) for i in ids])
        run = subprocess.run([CLI, "health", "--shards=" + ",".join(targets)],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.count("SERVING"), SHARDS)
        # A --batch over the owning shard's limit is refused before anything is sent: the CLI
        # asks that shard's status through the proxy, routed by the model's id.
        tiny = os.path.join(self.data.name, "tiny.svm")
        with open(tiny, "w") as f:
            f.write("+1 1:1\n")
        run = subprocess.run([CLI, "--server=" + self.nginx.target, "train", tiny,
                              "--model=" + ids[0], "--batch=20000", "--progress=no"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("--batch=20000 is over the server's limit of 10000 items a request",
                      run.stderr)
        self.assertEqual(self.proxy.model(ids[0]).status().stats.examples, 0)
        # The same data through the proxy and into one server: the same models, bit for bit.
        single = pp.Perceptrond(PERCEPTROND, "--durability=none")
        try:
            with perceptrond.Client(single.target) as direct:
                for model_id in ids[:6]:
                    x = rng.standard_normal((3000, 5))
                    y = np.where(x @ np.arange(1, 6) > 0, 1, -1)
                    d = direct.create_model(model_id, dimension=5)
                    p = self.proxy.model(model_id)
                    self.assertSameBits(p.learn(x, y).scores, d.learn(x, y).scores)
                    # Issue through one connection, reveal through another.
                    with p.stream() as s, d.stream() as t:
                        issued, expected = s.issue(x[:50]), t.issue(x[:50])
                    self.assertEqual(issued.ids.tolist(), expected.ids.tolist())
                    with perceptrond.Client(self.nginx.target) as other:
                        with other.model(model_id).stream() as s:
                            got = s.reveal(issued.ids, y[:50])
                    with d.stream() as t:
                        want = t.reveal(expected.ids, y[:50])
                    self.assertSameBits(got.scores, want.scores)
                    self.assertSameBits(p.weights(), d.weights())
                    self.assertSameBits(p.decision_function(x[:100]),
                                        d.decision_function(x[:100]))
                    status = next(iter(p.watch(min_interval=0.01)))
                    self.assertEqual(status.stats.examples, 3050)
                    ps, ds = p.status().stats, d.status().stats
                    ps.ClearField("certificate")  # refreshed in the background, at its own pace
                    ds.ClearField("certificate")
                    self.assertEqual(ps, ds)
                # A multiclass model (docs/design.md section 2.8) the same way.
                x = rng.standard_normal((3000, 5))
                names = np.array(["a", "b", "c"])[np.argmax(x[:, :3], axis=1)]
                d = direct.create_model("multi", dimension=5, classes=["a", "b", "c"])
                p = self.proxy.create_model("multi", dimension=5, classes=["a", "b", "c"])
                got, want = p.learn(x, names), d.learn(x, names)
                self.assertSameBits(got.scores, want.scores)
                self.assertEqual(list(got.predicted), list(want.predicted))
                self.assertSameBits(p.weights(), d.weights())
                ps, ds = p.status(), d.status()
                self.assertEqual(list(ps.confusion), list(ds.confusion))
                ps.stats.ClearField("certificate")
                ds.stats.ClearField("certificate")
                self.assertEqual(ps.stats, ds.stats)
        finally:
            self.assertEqual(single.stop(), 0)
        # What the proxy cannot route is refused, not sent to some shard.
        with self.assertRaises(perceptrond.PerceptronError) as e:
            self.proxy.list_models()
        self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("ask each shard", e.exception.message)
        with self.assertRaises(perceptrond.PerceptronError) as e:
            self.proxy.import_model(self.proxy.export_model(ids[0]), "")  # the blob's own id
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("x-perceptron-model", e.exception.message)

    def test_a_killed_shard_answers_unavailable_and_recovers_everything(self):
        ids = [f"m{k}" for k in range(24)]
        for model_id in ids:
            self.proxy.create_model(model_id, dimension=4)
        owners = self.owners()
        victim = owners[ids[0]][0]
        lost = [m for m in ids if owners[m] == [victim]]
        kept = [m for m in ids if owners[m] != [victim]]
        self.assertTrue(lost and kept)
        rng = np.random.default_rng(2)
        x = rng.standard_normal((500, 4))
        y = np.where(x[:, 0] > 0, 1, -1)
        acknowledged = {}
        for model_id in ids:
            acknowledged[model_id] = self.proxy.model(model_id).learn(x, y).stats.examples
        # An id the victim owns, found while it is up (created and deleted through the proxy).
        for k in range(200):
            fresh = f"new{k}"
            self.proxy.create_model(fresh, dimension=4)
            owner = self.owners()[fresh]
            self.proxy.model(fresh).delete()
            if owner == [victim]:
                break
        port = self.shards[victim].port
        self.shards[victim].proc.send_signal(signal.SIGKILL)
        self.shards[victim].proc.wait()
        for model_id in lost:
            for call in (lambda: self.proxy.model(model_id).status(),
                         lambda: self.proxy.model(model_id).learn(x, y)):
                with self.assertRaises(perceptrond.PerceptronError) as e:
                    call()
                self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE,
                                 e.exception.message)
        # An id the dead shard owns cannot be created elsewhere meanwhile.
        with self.assertRaises(perceptrond.PerceptronError) as e:
            self.proxy.create_model(fresh, dimension=4)
        self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)
        # The other shards go on learning.
        for model_id in kept:
            acknowledged[model_id] = self.proxy.model(model_id).learn(x, y).stats.examples
        # Back on its port with its data directory: every acknowledged item is there.
        dead = self.shards[victim]
        dead.proc.stdout.close()
        dead.stderr.close()
        self.shards[victim] = pp.Perceptrond(PERCEPTROND, "--durability=sync", f"--port={port}",
                                             data_dir=dead.data_dir)
        dead.dir.cleanup()
        for model_id in ids:
            self.assertEqual(self.proxy.model(model_id).status().stats.examples,
                             acknowledged[model_id], model_id)
        self.assertEqual(sorted(self.owners()), sorted(ids))
        self.assertNotIn(fresh, self.owners())

    def kill_and_restart(self, victim):
        """SIGKILL to shard `victim`, then the shard again on its port and data directory."""
        port = self.shards[victim].port
        self.shards[victim].proc.send_signal(signal.SIGKILL)
        self.shards[victim].proc.wait()
        dead = self.shards[victim]
        dead.proc.stdout.close()
        dead.stderr.close()
        self.shards[victim] = pp.Perceptrond(PERCEPTROND, "--durability=sync", f"--port={port}",
                                             data_dir=dead.data_dir)
        dead.dir.cleanup()

    def kill_mid_stream(self, victim, model, examples, streaming):
        """Once `model` holds `examples`, while `streaming()` still holds, kill_and_restart."""
        end = time.monotonic() + 120
        while model.status().stats.examples < examples:
            self.assertTrue(streaming(), "the stream ended before the kill")
            self.assertLess(time.monotonic(), end, "the stream made no progress")
            time.sleep(0.01)  # a poll's pause
        self.kill_and_restart(victim)

    def test_python_learn_resumes_a_stream_cut_by_a_dead_shard(self):
        rng = np.random.default_rng(8)
        x = rng.standard_normal((60000, 10))
        y = np.where(x @ rng.standard_normal(10) + 0.3 * rng.standard_normal(60000) > 0, 1, -1)
        self.proxy.create_model("py-resumed", dimension=10)
        victim = self.owners()["py-resumed"][0]
        model = self.proxy.model("py-resumed")
        outcome = {}

        def learn():
            try:
                outcome["result"] = model.learn(x, y, batch_size=16, retry_for=120)
            except Exception as e:  # reported by the test's thread below
                outcome["error"] = e

        thread = threading.Thread(target=learn)
        thread.start()
        self.kill_mid_stream(victim, model, 5000, thread.is_alive)
        thread.join(timeout=300)
        self.assertNotIn("error", outcome)
        result = outcome["result"]
        self.assertEqual(result.stats.examples, 60000)
        # The same examples once through one server: the same model bit for bit, and the same
        # answers for every example (each one's from the stream that committed it).
        single = pp.Perceptrond(PERCEPTROND, "--durability=none")
        try:
            with perceptrond.Client(single.target) as direct:
                want = direct.create_model("py-resumed", dimension=10)
                expected = want.learn(x, y, batch_size=1000)
                self.assertSameBits(model.weights(), want.weights())
                self.assertEqual(result.stats.mistakes, expected.stats.mistakes)
                # Every example has the answer one server gave, but those committed by the
                # broken stream whose answers were lost with it: those, and only those, are NaN.
                lost = np.zeros(60000, dtype=bool)
                lost[result.unanswered] = True
                self.assertSameBits(np.isnan(result.scores), lost)
                self.assertSameBits(result.scores[~lost], expected.scores[~lost])
                self.assertSameBits(result.mistakes[~lost], expected.mistakes[~lost])
        finally:
            single.stop()

    def test_train_resumes_a_stream_cut_by_a_dead_shard_without_losing_or_repeating(self):
        data = os.path.join(self.data.name, "stream.svm")
        subprocess.run([CLI, "generate", "--dim=20", "--count=100000", "--margin=0.05",
                        "--noise=0.05", "--seed=5", "--out=" + data],
                       check=True, stdout=subprocess.DEVNULL)
        self.proxy.create_model("resumed", dimension=20)
        victim = self.owners()["resumed"][0]
        model = self.proxy.model("resumed")
        # Small batches, few in flight: the stream is still going when the shard is killed.
        train = subprocess.Popen(
            [CLI, "--server=" + self.nginx.target, "train", data, "--model=resumed",
             "--batch=16", "--in_flight=4", "--retry_for=120s", "--progress=no"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.kill_mid_stream(victim, model, 10000, lambda: train.poll() is None)
        out, err = train.communicate(timeout=300)
        self.assertEqual(train.returncode, 0, err)
        self.assertIn("the stream broke after", err)
        self.assertIn("resuming at example", err)
        self.assertIn("trained resumed on", out)
        # The file once through one server, uninterrupted: the same model bit for bit, so no
        # example was lost or applied twice.
        single = pp.Perceptrond(PERCEPTROND, "--durability=none")
        try:
            run = subprocess.run([CLI, "--server=" + single.target, "train", data,
                                  "--model=resumed", "--create", "--dim=20", "--progress=no"],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            with perceptrond.Client(single.target) as direct:
                want = direct.model("resumed")
                got, expected = model.status().stats, want.status().stats
                self.assertEqual(got.examples, 100000)
                self.assertEqual((got.examples, got.mistakes, got.updates),
                                 (expected.examples, expected.mistakes, expected.updates))
                self.assertSameBits(model.weights(), want.weights())
        finally:
            single.stop()
        print(f"resumed through nginx: {err.strip()}", file=sys.stderr)

    def rebalance_while_writing(self, targets, writer_to, label):
        """Moves models to the shards `targets` (indexes into self.shards, some perhaps new):
        a second nginx routes by them; `perceptron rebalance` copies through it while a `train`
        through the live proxy writes 200,000 examples to a model that moves to shard
        `writer_to`; the live proxy is switched (reloaded) when rebalance says so, and a Python
        `learn(retry_for=...)` starts then on another model being moved (so it meets the move).
        Checks that every model is then on the shard both proxies route it to, and only there,
        with its export unchanged, and that both writers' models equal their data learned once
        by one server. Returns the rebalance's and the writer's output."""
        all_targets = [s.target for s in self.shards if s is not None]
        new_targets = [self.shards[i].target for i in targets]
        next_proxy = Nginx(new_targets)
        # What the Python writer logs each time its stream breaks and resumes.
        resumes = []
        keep = logging.Handler(logging.INFO)
        keep.emit = lambda record: resumes.append(record.getMessage())
        log = logging.getLogger("perceptrond")
        level = log.level
        log.addHandler(keep)
        log.setLevel(logging.INFO)
        try:
            ids = {server_id(s.target): i for i, s in enumerate(self.shards) if s is not None}
            # A model the move takes to `writer_to`, created where the live proxy sends it.
            writer = next(w for w in (f"{label}-writer-{k}" for k in range(1000))
                          if ids[server_id(next_proxy.target, w)] == writer_to
                          and ids[server_id(self.nginx.target, w)] != writer_to)
            self.proxy.create_model(writer, dimension=20)
            self.assertNotEqual(self.owners()[writer], [writer_to])
            pywriter = next(w for w in (f"{label}-py-{k}" for k in range(1000))
                            if ids[server_id(next_proxy.target, w)]
                            != ids[server_id(self.nginx.target, w)])
            self.proxy.create_model(pywriter, dimension=20)
            # A multiclass model the move takes elsewhere (docs/design.md section 2.8).
            multi = next(w for w in (f"{label}-multi-{k}" for k in range(1000))
                         if ids[server_id(next_proxy.target, w)]
                         != ids[server_id(self.nginx.target, w)])
            mx = np.random.default_rng(7).standard_normal((300, 5))
            self.proxy.create_model(multi, dimension=5, classes=["a", "b", "c"]).learn(
                mx, np.array(["a", "b", "c"])[np.argmax(mx[:, :3], axis=1)])
            rng = np.random.default_rng(5)
            px = rng.standard_normal((20000, 20))
            py = np.where(px @ rng.standard_normal(20) > 0, 1, -1)
            learned = {}
            connected = threading.Event()

            def learn_while_moving():
                try:
                    with perceptrond.Client(self.nginx.target, timeout=30) as c:
                        # A call through the proxy before its routes change: the connection
                        # is made, and the model found on its old shard.
                        model = c.get_model(pywriter)
                        connected.set()
                        learned["result"] = model.learn(px, py, batch_size=256, retry_for=120)
                except Exception as e:  # reported by the test's thread
                    learned["error"] = e
                finally:
                    connected.set()

            # A daemon: should it hang, the test fails below rather than the process at exit.
            pythread = threading.Thread(target=learn_while_moving, daemon=True)
            quiet = [m for m in self.owners() if m not in (writer, pywriter)]
            self.settle(quiet)
            before = {m: self.proxy.export_model(m) for m in quiet}
            data = os.path.join(self.data.name, label + ".svm")
            subprocess.run([CLI, "generate", "--dim=20", "--count=200000", "--margin=0.05",
                            "--noise=0.05", "--seed=9", "--out=" + data],
                           check=True, stdout=subprocess.DEVNULL)
            train = subprocess.Popen(
                [CLI, "--server=" + self.nginx.target, "train", data, "--model=" + writer,
                 "--batch=16", "--in_flight=4", "--retry_for=120s", "--progress=no"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            end = time.monotonic() + 120
            while self.proxy.model(writer).status().stats.examples < 5000:
                self.assertIsNone(train.poll(), "the writer ended before the rebalance")
                self.assertLess(time.monotonic(), end, "the writer made no progress")
                time.sleep(0.01)  # a poll's pause
            rebalance = subprocess.Popen(
                [CLI, "--server=" + next_proxy.target, "--live=" + self.nginx.target,
                 "--shards=" + ",".join(all_targets), "--switch_timeout=120s", "rebalance"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            progress = []
            for line in rebalance.stderr:
                progress.append(line)
                if "switch it now" in line:
                    self.assertIsNone(train.poll(), "the writer ended before its model moved")
                    pythread.start()
                    # Its connection is made before the proxy's routes change; its stream
                    # then goes to the old shard (while an old worker holds the connection)
                    # or the new one, and must learn every example either way.
                    self.assertTrue(connected.wait(timeout=60))
                    self.nginx.reload(new_targets)
            out, _ = rebalance.communicate(timeout=300)
            self.assertEqual(rebalance.returncode, 0, "".join(progress) + out)
            written, err = train.communicate(timeout=300)
            self.assertEqual(train.returncode, 0, err)
            pythread.join(timeout=300)
            self.assertFalse(pythread.is_alive())
            self.assertNotIn("error", learned)
            self.assertEqual(learned["result"].unanswered, [])
            self.assertEqual(self.proxy.model(pywriter).status().stats.examples, len(py),
                             self.where(pywriter, learned["result"], progress))
            self.assertIn("is being moved to another shard", err)
            self.assertIn("resuming at example", err)
            # The Python writer met the move too, and said so: the mark, or, once rebalance saw
            # the switch and dropped the old copy, the model gone from the old shard.
            self.assertTrue(any("is being moved to another shard" in m
                                or "was moved to another shard" in m for m in resumes), resumes)
            # Every model on exactly one shard, the one both proxies route it to, unchanged.
            owners = self.owners()
            self.assertEqual(sorted(owners), sorted(list(before) + [writer, pywriter]))
            for m, on in owners.items():
                self.assertEqual(len(on), 1, f"{m} on shards {on}")
                self.assertEqual(on[0], ids[server_id(self.nginx.target, m)], m)
                self.assertEqual(on[0], ids[server_id(next_proxy.target, m)], m)
            self.assertEqual(owners[writer], [writer_to])
            self.assertEqual(set(targets), {on[0] for on in owners.values()})
            for m, blob in before.items():
                self.assertEqual(self.proxy.export_model(m), blob, m)
            self.assertIn(f"perceptron: moved {multi} ", "".join(progress))
            moved = int(re.search(r"(\d+) moved", out).group(1))
            self.assertGreater(moved, 1)
            self.assertEqual(sum(line.startswith("perceptron: moved ") for line in progress),
                             moved)
        finally:
            log.removeHandler(keep)
            log.setLevel(level)
            next_proxy.stop()
        # The file once through one server, uninterrupted: the same model bit for bit.
        single = pp.Perceptrond(PERCEPTROND, "--durability=none")
        try:
            run = subprocess.run([CLI, "--server=" + single.target, "train", data,
                                  "--model=" + writer, "--create", "--dim=20", "--progress=no"],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            with perceptrond.Client(single.target) as direct:
                got = self.proxy.model(writer).status().stats
                want = direct.model(writer).status().stats
                self.assertEqual(got.examples, 200000)
                self.assertEqual((got.examples, got.mistakes, got.updates),
                                 (want.examples, want.mistakes, want.updates))
                self.assertSameBits(self.proxy.model(writer).weights(),
                                    direct.model(writer).weights())
                once = direct.create_model(pywriter, dimension=20).learn(px, py)
                said = "the Python writer's resumptions:\n" + "\n".join(resumes)
                self.assertSameBits(learned["result"].scores, once.scores, said)
                self.assertSameBits(self.proxy.model(pywriter).weights(),
                                    direct.model(pywriter).weights(), said)
        finally:
            single.stop()
        return "".join(progress) + out, err

    def test_rebalance_3_to_4_to_3_moves_models_while_a_stream_writes(self):
        rng = np.random.default_rng(3)
        for k in range(60):
            x = rng.standard_normal((200, 5))
            if k % 6 == 0:  # multiclass models move as the binary ones do
                m = self.proxy.create_model(f"model-{k:02d}", dimension=5,
                                            classes=["a", "b", "c"])
                m.learn(x, np.array(["a", "b", "c"])[np.argmax(x[:, :3], axis=1)])
                continue
            m = self.proxy.create_model(f"model-{k:02d}", dimension=5)
            m.learn(x, np.where(x @ np.arange(1, 6) > 0, 1, -1))
        self.shards.append(pp.Perceptrond(PERCEPTROND, "--durability=sync",
                                          data_dir=os.path.join(self.data.name, "3")))
        grow, grow_writer = self.rebalance_while_writing([0, 1, 2, 3], 3, "grow")
        shrink, shrink_writer = self.rebalance_while_writing([0, 1, 2], 0, "shrink")
        self.assertEqual(self.shards[3].stop(), 0)
        self.shards[3] = None
        for name, text in (("3 -> 4", grow), ("writer", grow_writer), ("4 -> 3", shrink),
                           ("writer", shrink_writer)):
            print(f"{name}:\n{text.strip()}", file=sys.stderr)

