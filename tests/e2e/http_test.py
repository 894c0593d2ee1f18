"""The HTTP port against a real perceptrond: /metrics parses as Prometheus text and its counters
equal GetStatus's, the JSON status and history equal the gRPC ones, /healthz, errors, tokens,
and `perceptron plot` drawing the same curve.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import json
import os
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from prometheus_client.parser import text_string_to_metric_families

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")
CLI = pp.setting("PERCEPTRON_CLI")
STUBS = pp.setting("PERCEPTRON_STUBS")
CSV = pp.setting("PERCEPTRON_BREAST_CANCER_CSV")
pb, pb_grpc = pp.import_stubs(STUBS)
import grpc  # noqa: E402


def samples(text):
    """{(sample name, frozenset(labels)): value} of a Prometheus text exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def model_value(metrics, name, model):
    return metrics.get((name, frozenset({("model", model)})))


def rpc_value(metrics, name, method, **extra):
    labels = {"grpc_service": "perceptron.v1.PerceptronService", "grpc_method": method}
    labels.update(extra)
    for (n, ls), v in metrics.items():
        if n == name and labels.items() <= dict(ls).items():
            return v
    return None


class HttpTest(pp.ServerTest):
    binary = PERCEPTROND
    stubs = pb_grpc

    def create(self, model_id, **config):
        return self.stub.CreateModel(pb.CreateModelRequest(
            model_id=model_id, config=pb.ModelConfig(**config)))

    def test_metrics_parse_and_equal_get_status(self):
        stream = pp.Stream(d=8, gamma=0.05, noise=0.05, seed=3)
        self.create("alpha", dimension=8, gamma=0.05, comparator=stream.u + [0.0])
        self.create("beta", dimension=8, algorithm=pb.MARGIN, gamma=0.05)
        self.create("gamma", dimension=8, algorithm=pb.AVERAGED)
        with self.assertRaises(grpc.RpcError) as dup:
            self.create("alpha", dimension=8)
        self.assertEqual(dup.exception.code(), grpc.StatusCode.ALREADY_EXISTS)
        sent = {"alpha": 3000, "beta": 1700, "gamma": 900}
        requests = 0
        for model_id, n in sent.items():
            responses = pp.learn(pb, self.stub, model_id, [stream.next() for _ in range(n)])
            requests += len(responses)
        # Predictions issued and left pending, some revealed, one bad item.
        issue = pb.LearnRequest(model_id="alpha")
        for _ in range(10):
            issue.items.add().example.dense.values.extend(stream.next()[0])
        issue.items.add().example.dense.values.extend([1.0, 2.0])  # wrong dimension
        issued = list(self.stub.Learn(iter([issue])))[0]
        self.assertTrue(issued.results[10].HasField("error"))
        ids = [r.prediction.prediction_id for r in issued.results[:10]]
        self.stub.Reveal(pb.RevealRequest(model_id="alpha", items=[
            pb.RevealItem(prediction_id=i, label=1) for i in ids[:4]]))
        requests += 1
        # A stream the server's interceptor records (the handlers record the rest).
        chunks = list(self.stub.GetWeightsChunks(pb.GetWeightsRequest(model_id="gamma")))

        status, ctype, body = self.server.get("/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        metrics = samples(body)
        self.assertEqual(metrics[("perceptron_models", frozenset())], 3)
        # The data directory's figures: nothing written with durability none.
        self.assertEqual(metrics[("perceptron_storage_durability",
                                  frozenset({("mode", "none")}))], 1)
        for name in ("commits", "records", "snapshots"):
            self.assertEqual(metrics[("perceptron_storage_%s_total" % name, frozenset())], 0)
        self.assertEqual(metrics[("perceptron_storage_failed", frozenset())], 0)
        for model_id in sent:
            st = self.stub.GetStatus(pb.GetStatusRequest(model_id=model_id)).stats
            with self.subTest(model=model_id):
                for name, want in [("perceptron_model_examples_total", st.examples),
                                   ("perceptron_model_mistakes_total", st.mistakes),
                                   ("perceptron_model_updates_total", st.updates),
                                   ("perceptron_model_predictions_total", st.predictions),
                                   ("perceptron_model_expired_total", st.expired),
                                   ("perceptron_model_pending_predictions", st.pending),
                                   ("perceptron_model_radius", st.radius)]:
                    self.assertEqual(model_value(metrics, name, model_id), want, name)
                bound = model_value(metrics, "perceptron_model_update_bound", model_id)
                td = model_value(metrics, "perceptron_model_td_gamma", model_id)
                if st.bound_available:
                    self.assertEqual(bound, st.bound)
                else:
                    self.assertIsNone(bound)
                if st.td_available:
                    self.assertEqual(td, st.td_gamma)
                else:
                    self.assertIsNone(td)
                # As text, too: the shortest digits that read back to GetStatus's double
                # (Python's repr), so any parser gets the same bits.
                for name, want in [("perceptron_model_update_bound", st.bound),
                                   ("perceptron_model_td_gamma", st.td_gamma)]:
                    line = '%s{model="%s"} ' % (name, model_id)
                    if line in body:
                        self.assertIn(line + repr(want) + "\n", body)
        alpha = self.stub.GetStatus(pb.GetStatusRequest(model_id="alpha")).stats
        self.assertEqual((alpha.examples, alpha.predictions, alpha.pending), (3004, 10, 6))
        self.assertTrue(alpha.bound_available and alpha.bound > alpha.updates)
        # The RPC counters, by method and code (the GetStatus calls above came after the
        # scrape).
        self.assertEqual(rpc_value(metrics, "grpc_server_handled_total", "CreateModel",
                                   grpc_code="OK"), 3)
        self.assertEqual(rpc_value(metrics, "grpc_server_handled_total", "CreateModel",
                                   grpc_code="AlreadyExists"), 1)
        self.assertEqual(rpc_value(metrics, "grpc_server_started_total", "Learn"), 4)
        self.assertEqual(rpc_value(metrics, "grpc_server_handled_total", "Learn",
                                   grpc_code="OK"), 4)
        self.assertEqual(rpc_value(metrics, "grpc_server_msg_received_total", "Learn")
                         + rpc_value(metrics, "grpc_server_msg_received_total", "Reveal"),
                         requests + 1)
        self.assertEqual(rpc_value(metrics, "grpc_server_handling_seconds_count", "Learn"), 4)
        self.assertEqual(rpc_value(metrics, "grpc_server_msg_sent_total", "Learn"),
                         rpc_value(metrics, "grpc_server_msg_received_total", "Learn"))
        self.assertEqual(rpc_value(metrics, "grpc_server_handled_total", "Reveal",
                                   grpc_code="OK"), 1)
        self.assertEqual(rpc_value(metrics, "grpc_server_started_total", "GetWeightsChunks"), 1)
        self.assertEqual(rpc_value(metrics, "grpc_server_msg_sent_total", "GetWeightsChunks"),
                         len(chunks))
        self.assertEqual(rpc_value(metrics, "grpc_server_handled_total", "GetWeightsChunks",
                                   grpc_code="OK"), 1)
        self.assertEqual(rpc_value(metrics, "grpc_server_started_total", "Predict"), 0)

    def test_json_status_and_history_equal_grpc(self):
        stream = pp.Stream(d=5, gamma=0.1, noise=0.03, seed=5)
        self.create("curve", dimension=5, gamma=0.1, comparator=stream.u + [0.0])
        pp.learn(pb, self.stub, "curve", [stream.next() for _ in range(5000)], batch=50)

        status, ctype, body = self.server.get("/api/v1/models")
        self.assertEqual((status, ctype), (200, "application/json"))
        listed = json.loads(body)["models"]
        self.assertEqual([m["model_id"] for m in listed], ["curve"])
        st = self.stub.GetStatus(pb.GetStatusRequest(model_id="curve"))
        self.assertEqual(int(listed[0]["stats"]["examples"]), st.stats.examples)
        self.assertEqual(int(listed[0]["stats"]["mistakes"]), st.stats.mistakes)
        self.assertEqual(listed[0]["stats"]["bound"], st.stats.bound)
        status, _, body = self.server.get("/api/v1/models/curve")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["stats"]["td_gamma"], st.stats.td_gamma)

        # A model with no comparator has no bound and no TD_gamma: absent, not 0.
        self.create("plain", dimension=5)
        pp.learn(pb, self.stub, "plain", [stream.next() for _ in range(50)])
        status, _, body = self.server.get("/api/v1/models/plain")
        self.assertEqual(status, 200)
        stats = json.loads(body)["stats"]
        self.assertEqual((stats["bound_available"], stats["td_available"]), (False, False))
        self.assertNotIn("bound", stats)
        self.assertNotIn("td_gamma", stats)
        self.assertNotIn("margin_bound", stats["certificate"])
        self.assertEqual(stats["certificate"]["margin_bound_available"], False)
        plain = self.stub.GetStatus(pb.GetStatusRequest(model_id="plain")).stats
        self.assertFalse(plain.HasField("bound") or plain.HasField("td_gamma"))
        self.assertTrue(st.stats.HasField("bound") and st.stats.HasField("td_gamma"))

        status, _, body = self.server.get("/api/v1/models/curve/history")
        self.assertEqual(status, 200)
        h = json.loads(body)
        g = self.stub.GetHistory(pb.GetHistoryRequest(model_id="curve"))
        self.assertEqual(len(h["points"]), len(g.points))
        # Bounded and downsampled: 5,000 examples in at most `capacity` points, evenly spaced,
        # ending with the model now; the bound holds at every point.
        self.assertLessEqual(len(g.points), g.capacity)
        self.assertGreater(len(g.points), g.capacity // 4)
        examples = [p.examples for p in g.points]
        self.assertEqual(examples, sorted(set(examples)))
        self.assertEqual(examples[-1], 5000)
        self.assertGreaterEqual(g.stride * g.capacity, 5000)
        last = g.points[-1]
        self.assertEqual((last.mistakes, last.updates, last.bound),
                         (st.stats.mistakes, st.stats.updates, st.stats.bound))
        for p, j in zip(g.points, h["points"]):
            self.assertEqual((int(j["examples"]), int(j["mistakes"]), j["bound"]),
                             (p.examples, p.mistakes, p.bound))
            self.assertLessEqual(p.updates, p.bound)
        mistakes = [p.mistakes for p in g.points]
        self.assertEqual(mistakes, sorted(mistakes))

    def test_json_features_equal_get_weights_with_top(self):
        self.create("words", hash_bits=8)
        items = [pb.LearnItem(labeled=pb.LabeledExample(
            features=pb.Features(named=pb.NamedFeatures(features=[
                pb.NamedFeature(space="t", name="w%d" % (t % 30)),
                pb.NamedFeature(name="n", number=t % 7 - 3.0)])),
            label=1 if t % 30 < 12 else -1)) for t in range(300)]
        list(self.stub.Learn(iter([pb.LearnRequest(model_id="words", items=items)])))
        status, _, body = self.server.get("/api/v1/models/words/features")
        self.assertEqual(status, 200)
        got = json.loads(body)
        want = self.stub.GetWeights(pb.GetWeightsRequest(model_id="words", top=10))
        self.assertEqual(len(got["top"]), len(want.top))
        self.assertEqual(len(want.top), 10)
        for j, f in zip(got["top"], want.top):
            self.assertEqual((j["index"], j["weight"], j.get("names", []), j.get("bias", False)),
                             (f.index, f.weight, list(f.names), f.bias))
        self.assertEqual(int(got["names"]["names"]), want.names.names)
        self.assertEqual(want.names.names, 31)  # t^w0..t^w29 and n
        st = self.stub.GetStatus(pb.GetStatusRequest(model_id="words"))
        self.assertEqual(st.names, want.names)
        self.assertEqual(got.get("values", []), [])
        # 10,001 is over the limit; a model with no names lists none.
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.GetWeights(pb.GetWeightsRequest(model_id="words", top=10001))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.create("plain", dimension=3)
        status, _, body = self.server.get("/api/v1/models/plain/features")
        self.assertEqual((status, json.loads(body).get("top", [])), (200, []))
        self.assertFalse(self.stub.GetStatus(pb.GetStatusRequest(model_id="plain")).HasField("names"))

    def test_healthz_page_and_errors(self):
        self.assertEqual(self.server.get("/healthz")[0::2], (200, "SERVING\n"))
        status, ctype, body = self.server.get("/")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/html"))
        self.assertIn("<svg", body.replace('"<svg', "<svg"))
        # A model that is not there, or an id no model can have: the answer says which.
        code, _, body = self.server.get("/api/v1/models/nope")
        self.assertEqual((code, json.loads(body)), (404, {"error": "model nope not found"}))
        self.assertEqual(self.server.get("/api/v1/models/nope/history")[0], 404)
        code, _, body = self.server.get("/api/v1/models/caf%C3%A9%22")
        self.assertEqual(code, 400)
        self.assertIn("model_id has character 0xc3 at position 3", json.loads(body)["error"])
        # An encoded zero byte does not end the id: model "a" is not read for "a%00b".
        self.stub.CreateModel(pb.CreateModelRequest(model_id="a",
                                                    config=pb.ModelConfig(dimension=2)))
        self.assertEqual(self.server.get("/api/v1/models/a")[0], 200)
        code, _, body = self.server.get("/api/v1/models/a%00b")
        self.assertEqual(code, 400)
        self.assertIn("model_id has character 0x25 at position 1", json.loads(body)["error"])
        self.assertEqual(self.server.get("/api/v1/models/%61")[0], 200)  # other bytes decode
        code, _, body = self.server.get("/nowhere")
        self.assertEqual(code, 404)
        # A path it does not serve: the answer says which it does.
        self.assertIn("/api/v1/models/ID/history", json.loads(body)["error"])
        # The HTTP requests are counted too.
        metrics = samples(self.server.get("/metrics")[2])
        self.assertEqual(metrics[("perceptron_http_requests_total",
                                  frozenset({("handler", "/healthz"), ("code", "200")}))], 1)
        self.assertEqual(metrics[("perceptron_http_requests_total",
                                  frozenset({("handler", "/api/v1/models/{id}"),
                                             ("code", "404")}))], 1)

    def settled(self, model_id):
        """The model's certificate once a converged solution covers every example (60 s at
        most): nothing changes it after that."""
        end = time.monotonic() + 60
        while True:
            st = self.stub.GetStatus(pb.GetStatusRequest(model_id=model_id)).stats
            c = st.certificate
            if c.available and c.converged and c.solved == c.examples == st.examples:
                return c
            self.assertLess(time.monotonic(), end, f"the certificate did not settle: {c}")
            time.sleep(0.01)  # a poll's pause

    def test_plot_draws_the_history(self):
        self.create("bc", dimension=30, gamma=0.01, comparator=[1.0] + [0.0] * 29)
        run = subprocess.run([CLI, "--server=" + self.server.target, "train", CSV, "--model=bc"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        cert = self.settled("bc")
        g = self.stub.GetHistory(pb.GetHistoryRequest(model_id="bc"))
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bc.svg")
            run = subprocess.run([CLI, "--server=" + self.server.target, "plot", "bc",
                                  "--out=" + out], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("569 examples", run.stdout)
            self.assertIn("certificate U %.6g" % cert.upper, run.stdout)
            svg = ET.parse(out).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        lines = {p.get("class"): p for p in svg.iter(ns + "polyline")}
        self.assertEqual(set(lines), {"mistakes", "bound", "certificate", "certificate-lower"})
        # The certificate as the stream grew: U and L at the points where it was available,
        # the last the certificate now.
        with_u = [p for p in g.points if p.HasField("certificate_upper")]
        self.assertEqual(with_u[-1].examples, 569)
        self.assertEqual((with_u[-1].certificate_upper, with_u[-1].certificate_lower),
                         (cert.upper, cert.lower))
        for cls, n in (("mistakes", len(g.points)), ("bound", len(g.points)),
                       ("certificate", len(with_u)), ("certificate-lower", len(with_u))):
            points = lines[cls].get("points").split()
            self.assertEqual(len(points), n, cls)
            self.assertEqual(int(lines[cls].get("data-count")), n)
            xs = [float(p.split(",")[0]) for p in points]
            self.assertEqual(xs, sorted(xs))
        # Mistakes never decrease: y (downwards in SVG) never increases.
        ys = [float(p.split(",")[1]) for p in lines["mistakes"].get("points").split()]
        self.assertEqual(ys, sorted(ys, reverse=True))
        texts = [t.text for t in svg.iter(ns + "text")]
        self.assertIn("bound on updates", texts)
        self.assertIn("certificate U", texts)
        self.assertIn("bc: cumulative mistakes against the bound on updates and the "
                      "certificate's U", texts)
        # The last x label ends at the axis' end (anchored "end"), so it is never clipped.
        width = float(svg.get("width"))
        for t in svg.iter(ns + "text"):
            if t.get("text-anchor") == "middle" and t.text != "labeled examples seen":
                self.assertLess(float(t.get("x")) + 4 * len(t.text), width, t.text)
        # A model with no bound: no bound line, and the legend does not promise one.
        self.create("nobound", dimension=30)
        run = subprocess.run([CLI, "--server=" + self.server.target, "train", CSV,
                              "--model=nobound"], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.settled("nobound")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "nobound.svg")
            run = subprocess.run([CLI, "--server=" + self.server.target, "plot", "nobound",
                                  "--out=" + out], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            svg = ET.parse(out).getroot()
        texts = [t.text for t in svg.iter(ns + "text")]
        self.assertNotIn("bound on updates", texts)
        self.assertNotIn("bc: cumulative mistakes", texts)
        self.assertEqual({p.get("class") for p in svg.iter(ns + "polyline")},
                         {"mistakes", "certificate", "certificate-lower"})
        self.assertIn("nobound: cumulative mistakes against the certificate's U", texts)
        run = subprocess.run([CLI, "--server=" + self.server.target, "plot", "nope",
                              "--out=/dev/null"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 1)
        self.assertIn("NOT_FOUND", run.stderr)


class RpcMetricsOffTest(unittest.TestCase):
    def test_storage_figures_in_sync_mode(self):
        server = pp.Perceptrond(PERCEPTROND, "--durability=sync")
        try:
            channel = grpc.insecure_channel(server.target)
            stub = pb_grpc.PerceptronServiceStub(channel)
            stub.CreateModel(pb.CreateModelRequest(model_id="s",
                                                   config=pb.ModelConfig(dimension=4)))
            stream = pp.Stream(d=4, seed=5)
            responses = pp.learn(pb, stub, "s", [stream.next() for _ in range(640)], batch=64)
            channel.close()
            text = server.get("/metrics")[2]
            metrics = samples(text)
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertEqual(metrics[("perceptron_storage_durability",
                                  frozenset({("mode", "sync")}))], 1)
        helps = [line for line in text.splitlines()
                 if line.startswith("# HELP perceptron_storage_durability ")]
        self.assertEqual(helps, ["# HELP perceptron_storage_durability The server's durability "
                                 "mode (--durability), as its label: always 1"])
        # A log record per batch that changed the model (each of the 10 did), and one per
        # certificate refresh the background stored meanwhile (as many as it finished),
        # group-committed: one fsync for every record queued.
        commits = metrics[("perceptron_storage_commits_total", frozenset())]
        records = metrics[("perceptron_storage_records_total", frozenset())]
        self.assertEqual(len(responses), 10)
        self.assertGreaterEqual(records, 10)
        self.assertTrue(1 <= commits <= records, (commits, records))
        self.assertGreater(metrics[("perceptron_storage_commit_seconds_total", frozenset())], 0)
        self.assertEqual(metrics[("perceptron_storage_failed", frozenset())], 0)

    def test_no_rpc_series_and_model_figures_still_equal_get_status(self):
        server = pp.Perceptrond(PERCEPTROND, "--durability=none", "--rpc_metrics=false")
        try:
            channel = grpc.insecure_channel(server.target)
            stub = pb_grpc.PerceptronServiceStub(channel)
            stream = pp.Stream(d=4, seed=9)
            stub.CreateModel(pb.CreateModelRequest(model_id="quiet",
                                                   config=pb.ModelConfig(dimension=4)))
            pp.learn(pb, stub, "quiet", [stream.next() for _ in range(700)])
            st = stub.GetStatus(pb.GetStatusRequest(model_id="quiet")).stats
            channel.close()
            status, _, body = server.get("/metrics")
            self.assertEqual(status, 200)
            names = {f.name for f in text_string_to_metric_families(body)}
            self.assertEqual({n for n in names if n.startswith("grpc_server_")}, set())
            self.assertIn("process_start_time_seconds", names)
            metrics = samples(body)
            self.assertEqual(st.examples, 700)
            self.assertEqual(model_value(metrics, "perceptron_model_examples_total", "quiet"),
                             st.examples)
            self.assertEqual(model_value(metrics, "perceptron_model_mistakes_total", "quiet"),
                             st.mistakes)
        finally:
            self.assertEqual(server.stop(), 0)


def learn_large_requests(server, seed):
    """A model "big" of d=1000 learns 1,200 rows in requests of 3.6 MB each (freed once
    learned); returns /metrics' samples after it and the allocator they name."""
    channel = grpc.insecure_channel(server.target)
    stub = pb_grpc.PerceptronServiceStub(channel)
    stub.CreateModel(pb.CreateModelRequest(model_id="big", config=pb.ModelConfig(dimension=1000)))
    stream = pp.Stream(d=1000, seed=seed)
    pp.learn(pb, stub, "big", [stream.next() for _ in range(1200)], batch=400)
    channel.close()
    metrics = samples(server.get("/metrics")[2])
    return metrics, [dict(labels)["allocator"] for name, labels in metrics
                     if name == "perceptron_memory_allocator"]


def await_release(server):
    """True once the server has given free memory back (within 60 s)."""
    end = time.monotonic() + 60
    while samples(server.get("/metrics")[2])[("perceptron_memory_releases_total",
                                              frozenset())] < 1:
        if time.monotonic() > end:
            return False
        time.sleep(0.05)  # a poll's pause
    return True


class MemoryTest(unittest.TestCase):
    def test_memory_figures_and_free_memory_given_back(self):
        """The process's resident memory and its allocator's figures in /metrics; with tcmalloc
        (the release build's allocator), the thread caches' bound is the flag's, and the memory a
        large request freed is given back to the system once the allocator holds
        --memory_release_mb free."""
        server = pp.Perceptrond(PERCEPTROND, "--durability=none", "--memory_release_mb=1",
                                "--expiry_interval=50ms", "--allocator_thread_cache_mb=3")
        try:
            metrics, allocator = learn_large_requests(server, seed=4)
            self.assertIn(allocator, (["tcmalloc"], ["system"]))
            resident = metrics[("process_resident_memory_bytes", frozenset())]
            with open("/proc/%d/status" % server.proc.pid) as f:
                rss = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:")][0]
            # The server's own figure, read a moment before this one.
            self.assertGreater(resident, 8 << 20)
            self.assertLess(abs(resident - rss), 0.5 * rss)
            if allocator == ["tcmalloc"]:
                # (Under a sanitizer's allocator, which glibc's figures do not see, 0.)
                self.assertGreater(metrics[("perceptron_memory_allocated_bytes", frozenset())],
                                   0)
                # The thread caches' bound, as tcmalloc reports it back.
                self.assertEqual(
                    metrics[("perceptron_memory_thread_cache_limit_bytes", frozenset())], 3 << 20)
                self.assertGreaterEqual(
                    metrics[("perceptron_memory_allocator_cached_bytes", frozenset())], 0)
                self.assertTrue(await_release(server), "nothing was given back")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_transfer_batch(self):
        """With tcmalloc, the server runs with the transfer batch of --allocator_transfer_objects
        (4 by default): it starts itself again, the same process, with TCMALLOC_TRANSFER_NUM_OBJ
        in its environment, and /metrics says the batch; a value the environment already sets
        is kept; 0 leaves tcmalloc's own, 32. Under the system allocator none of it applies:
        the batch is 0 and the environment is left as it was."""
        cases = [((), None, "4", 4), (("--allocator_transfer_objects=6",), None, "6", 6),
                 (("--allocator_transfer_objects=6",), {"TCMALLOC_TRANSFER_NUM_OBJ": "8"}, "8", 8),
                 (("--allocator_transfer_objects=0",), None, None, 32)]
        for flags, env, environ, batch in cases:
            with self.subTest(flags=flags, env=env):
                server = pp.Perceptrond(PERCEPTROND, "--durability=none", *flags, env=env)
                try:
                    metrics = samples(server.get("/metrics")[2])
                    allocator = [dict(labels)["allocator"] for name, labels in metrics
                                 if name == "perceptron_memory_allocator"]
                    with open("/proc/%d/environ" % server.proc.pid, "rb") as f:
                        variables = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if v)
                    got = variables.get(b"TCMALLOC_TRANSFER_NUM_OBJ")
                    got = got.decode() if got is not None else None
                    shown = metrics[("perceptron_memory_allocator_transfer_objects", frozenset())]
                    with open("/proc/%d/comm" % server.proc.pid) as f:
                        name = f.read().strip()
                    # Started again from its own file: named after it, as before.
                    self.assertEqual(name, "perceptrond")
                    if allocator == ["tcmalloc"]:
                        self.assertEqual(got, environ)
                        self.assertEqual(shown, batch)
                    else:
                        self.assertEqual(allocator, ["system"])
                        self.assertEqual(got, (env or {}).get("TCMALLOC_TRANSFER_NUM_OBJ"))
                        self.assertEqual(shown, 0)
                finally:
                    self.assertEqual(server.stop(), 0)
        # A batch past the most is refused before anything starts.
        run = subprocess.run([PERCEPTROND, "--allocator_transfer_objects=1025"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--allocator_transfer_objects must be at most 1024", run.stderr)

    def test_heap_on_huge_pages(self):
        """With tcmalloc, the heap the server takes is advised as huge pages
        (--allocator_huge_pages, the default; "hg" in smaps' VmFlags) and, once free memory has
        been given back, advised not to be ("nh"), so that the kernel does not fill the holes
        released; with --allocator_huge_pages=false it is not advised at all. The certificate is
        off: its own large arrays ask for huge pages whatever the flag."""
        def heap_flags(huge, release_mb):
            server = pp.Perceptrond(PERCEPTROND, "--durability=none", "--certificate_examples=0",
                                    "--memory_release_mb=%d" % release_mb, "--expiry_interval=50ms",
                                    "--allocator_huge_pages=" + str(huge).lower())
            try:
                allocator = learn_large_requests(server, seed=5)[1]
                if release_mb > 0 and allocator == ["tcmalloc"]:
                    self.assertTrue(await_release(server), "nothing was given back")
                # The flags of the heap's mappings (tcmalloc grows it with sbrk; threads'
                # stacks elsewhere carry "nh" of their own).
                flags, heap = set(), False
                with open("/proc/%d/smaps" % server.proc.pid) as f:
                    for line in f:
                        if line[:1] in "0123456789abcdef" and "-" in line.split()[0]:
                            heap = line.rstrip().endswith("[heap]")
                        elif line.startswith("VmFlags:") and heap:
                            flags.update(line.split()[1:])
                return allocator, flags & {"hg", "nh"}
            finally:
                self.assertEqual(server.stop(), 0)

        allocator, advised = heap_flags(True, 0)
        if allocator != ["tcmalloc"]:
            self.assertEqual(advised, set())  # a sanitizer's or glibc's heap: never advised
            return
        self.assertEqual(advised, {"hg"})
        self.assertEqual(heap_flags(False, 0)[1], set())
        self.assertIn("nh", heap_flags(True, 1)[1])


class HttpTokensTest(unittest.TestCase):
    def test_tokens_guard_everything_but_healthz(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False) as f:
            f.write("admin-token-0123456789 admin\nteam-a-reader-0123456789 read team-a-\n")
            tokens = f.name
        server = pp.Perceptrond(PERCEPTROND, "--durability=none", "--tokens_file=" + tokens)
        try:
            channel = grpc.insecure_channel(server.target)
            stub = pb_grpc.PerceptronServiceStub(channel)
            meta = [("authorization", "Bearer admin-token-0123456789")]
            for m in ("team-a-one", "team-b-two"):
                stub.CreateModel(pb.CreateModelRequest(
                    model_id=m, config=pb.ModelConfig(dimension=3)), metadata=meta)
            channel.close()
            self.assertEqual(server.get("/healthz")[0], 200)
            self.assertEqual(server.get("/")[0], 200)  # static; its requests carry the token
            for path in ("/metrics", "/api/v1/models", "/api/v1/models/team-a-one",
                         "/api/v1/models/team-a-one/history"):
                self.assertEqual(server.get(path)[0], 401, path)
                self.assertEqual(server.get(path, token="wrong-token-0123456789")[0], 401, path)
            self.assertEqual(server.get("/api/v1/models/team-b-two", "team-a-reader-0123456789")[0], 403)
            self.assertEqual(server.get("/api/v1/models/team-a-one", "team-a-reader-0123456789")[0], 200)
            listed = json.loads(server.get("/api/v1/models", "team-a-reader-0123456789")[2])["models"]
            self.assertEqual([m["model_id"] for m in listed], ["team-a-one"])
            metrics = samples(server.get("/metrics", "team-a-reader-0123456789")[2])
            self.assertIsNotNone(model_value(metrics, "perceptron_model_examples_total",
                                             "team-a-one"))
            self.assertIsNone(model_value(metrics, "perceptron_model_examples_total",
                                          "team-b-two"))
            metrics = samples(server.get("/metrics", "admin-token-0123456789")[2])
            self.assertEqual(metrics[("perceptron_models", frozenset())], 2)
            self.assertNotIn("admin-token-0123456789", server.stderr_text())
        finally:
            self.assertEqual(server.stop(), 0)
            os.unlink(tokens)

