"""The real Prometheus server (Debian's prometheus) scraping a real perceptrond with the
deployment's alerting rules (deploy/prometheus/rules.yml): every per-model series perceptrond
exposes reaches Prometheus with the value GetStatus gives, the rules load and evaluate, and a
server that stops answering scrapes sets PerceptrondDown pending. Then the Grafana dashboard's
queries (deploy/grafana) name only series that /metrics exposes.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")
STUBS = pp.setting("PERCEPTRON_STUBS")
DEPLOY = pp.setting("PERCEPTRON_DEPLOY")
pb, pb_grpc = pp.import_stubs(STUBS)
import grpc  # noqa: E402

DEADLINE = 120  # seconds for anything Prometheus is waited for


def until(what, fetch, ok):
    """fetch() until ok(value), at most DEADLINE seconds; the value."""
    end = time.monotonic() + DEADLINE
    while True:
        value = fetch()
        if ok(value):
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}; last: {value!r}")
        time.sleep(0.2)


class Prometheus:
    """prometheus on a free loopback port (read back from the socket it listens on)."""

    def __init__(self, config):
        self.dir = tempfile.TemporaryDirectory(prefix="prometheus-")
        path = os.path.join(self.dir.name, "prometheus.yml")
        with open(path, "w") as f:
            f.write(config)
        self.log = open(os.path.join(self.dir.name, "log"), "w+")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + path,
             "--storage.tsdb.path=" + os.path.join(self.dir.name, "data"),
             "--web.listen-address=127.0.0.1:0", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = until("prometheus to listen", self._listening, lambda p: p is not None)
        self.url = f"http://127.0.0.1:{self.port}"
        until("prometheus to be ready", self._ready, bool)

    def _listening(self):
        if self.proc.poll() is not None:
            self.log.seek(0)
            raise AssertionError("prometheus exited: " + self.log.read())
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if f"pid={self.proc.pid}," in line:
                return int(line.split()[3].rsplit(":", 1)[1])
        return None

    def _ready(self):
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        """{frozenset(labels without __name__): (value, timestamp)} of an instant query."""
        return {frozenset((k, v) for k, v in s["metric"].items() if k != "__name__"):
                (float(s["value"][1]), s["value"][0])
                for s in self.api("query", query=expr)["result"]}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()
        self.dir.cleanup()


def exposed(text):
    """{(family name, frozenset(labels))} of every sample in a /metrics text."""
    return {(s.name, frozenset(s.labels.items()))
            for family in text_string_to_metric_families(text) for s in family.samples}


class PrometheusTest(pp.ServerTest):
    binary = PERCEPTROND
    stubs = pb_grpc

    def test_prometheus_scrapes_what_get_status_gives_and_the_rules_run(self):
        # Models of each kind of figure: with a comparator (bound, TD_gamma), margin, averaged;
        # predictions left pending; the certificate on (the default).
        stream = pp.Stream(d=6, gamma=0.05, noise=0.03, seed=11)
        configs = {"alpha": pb.ModelConfig(dimension=6, gamma=0.05, comparator=stream.u + [0.0]),
                   "beta": pb.ModelConfig(dimension=6, algorithm=pb.MARGIN, gamma=0.05),
                   "gamma": pb.ModelConfig(dimension=6, algorithm=pb.AVERAGED)}
        for model_id, config in configs.items():
            self.stub.CreateModel(pb.CreateModelRequest(model_id=model_id, config=config))
            pp.learn(pb, self.stub, model_id, [stream.next() for _ in range(1500)])
        issue = pb.LearnRequest(model_id="alpha")
        for _ in range(7):
            issue.items.add().example.dense.values.extend(stream.next()[0])
        list(self.stub.Learn(iter([issue])))

        rules = os.path.join(DEPLOY, "prometheus", "rules.yml")
        prometheus = Prometheus(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{json.dumps(rules)}]\n"
            "scrape_configs:\n"
            "  - job_name: perceptrond\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{self.server.http_port}']}}]\n")
        try:
            self.check_series(prometheus)
            self.check_rules_and_down(prometheus)
        finally:
            prometheus.stop()

    def status(self, model_id):
        return self.stub.GetStatus(pb.GetStatusRequest(model_id=model_id))

    def check_series(self, prometheus):
        # Each model's certificate first (computed in the background, slowly under sanitizers):
        # its series appear on /metrics once it is available, and stay.
        for model_id in ("alpha", "beta", "gamma"):
            until(f"the certificate of {model_id}",
                  lambda: self.status(model_id).stats.certificate.available, bool)
        _, _, body = self.server.get("/metrics")
        series = {(name, labels) for name, labels in exposed(body)
                  if name.startswith("perceptron_model_")}

        def figures(status):
            """Every per-model series' value as GetStatus gives it."""
            st = status.stats
            out = {"perceptron_model_examples_total": st.examples,
                   "perceptron_model_mistakes_total": st.mistakes,
                   "perceptron_model_updates_total": st.updates,
                   "perceptron_model_predictions_total": st.predictions,
                   "perceptron_model_expired_total": st.expired,
                   "perceptron_model_pending_predictions": st.pending,
                   "perceptron_model_radius": st.radius,
                   "perceptron_model_recent_mistake_rate": status.recent_mistake_rate}
            if st.bound_available:
                out["perceptron_model_update_bound"] = st.bound
            if st.td_available:
                out["perceptron_model_td_gamma"] = st.td_gamma
            if st.certificate.available:
                out["perceptron_model_certificate_upper"] = st.certificate.upper
                out["perceptron_model_certificate_lower"] = st.certificate.lower
                out["perceptron_model_certificate_frozen"] = float(
                    st.certificate.state == pb.Certificate.FROZEN)
            return out

        seen = set()
        for model_id in ("alpha", "beta", "gamma"):
            with self.subTest(model=model_id):
                names = {name for name, labels in series if ("model", model_id) in labels}

                def scraped_between():
                    """GetStatus, then every series from scrapes taken after it, then GetStatus:
                    the certificate refreshes in the background, so the two may differ."""
                    before = self.status(model_id)
                    started = time.time()
                    until("a scrape after GetStatus",
                          lambda: prometheus.query(
                              'timestamp(perceptron_model_examples_total{model="%s"})'
                              % model_id),
                          lambda q: q and next(iter(q.values()))[0] > started)
                    got = {}
                    for name in names:
                        (value, _), = prometheus.query(
                            '%s{model="%s"}' % (name, model_id)).values()
                        got[name] = value
                    return before, got, self.status(model_id)

                before, got, after = until("GetStatus to read the same around a scrape",
                                           scraped_between, lambda r: r[0] == r[2])
                want = figures(after)
                self.assertEqual(names, set(want), "series exposed against GetStatus's")
                self.assertEqual(got, {k: float(v) for k, v in want.items()})
                self.assertEqual(after.stats.examples, 1500)
                seen |= names
        # Every kind of per-model figure came through, the certificate's among them.
        self.assertEqual(len(seen), 13, seen)
        self.assertEqual(self.status("alpha").stats.pending, 7)

    def check_rules_and_down(self, prometheus):
        groups = prometheus.api("rules")["groups"]
        rules = {r["name"]: r for g in groups for r in g["rules"]}
        self.assertEqual(set(rules), {"PerceptrondDown", "PerceptronModelSetAside",
                                      "PerceptronUpdatesAboveBound", "PerceptronModelDrift",
                                      "PerceptronPendingPilingUp",
                                      "PerceptronPredictionsExpiring"})
        until("every rule evaluated", lambda: prometheus.api("rules")["groups"],
              lambda gs: all(r["health"] == "ok" and r.get("lastEvaluation", "").startswith("2")
                             and not r["lastEvaluation"].startswith("0001")
                             for g in gs for r in g["rules"]))
        # Nothing fires for a healthy server (the classic model is under its bound).
        self.assertEqual(prometheus.api("alerts")["alerts"], [])
        # The server goes away: up turns 0 and PerceptrondDown is pending (it fires after 1m).
        self.assertEqual(self.server.stop(), 0)
        self.server = None
        alerts = until("PerceptrondDown pending",
                       lambda: prometheus.api("alerts")["alerts"],
                       lambda a: any(x["labels"]["alertname"] == "PerceptrondDown" for x in a))
        down = [x for x in alerts if x["labels"]["alertname"] == "PerceptrondDown"][0]
        self.assertEqual(down["state"], "pending")
        self.assertEqual(down["labels"]["job"], "perceptrond")

    def tearDown(self):
        self.channel.close()
        if self.server is not None:
            self.assertEqual(self.server.stop(), 0, "perceptrond did not exit cleanly")

    def test_grafana_dashboard_queries_name_exposed_series(self):
        """Every metric a panel of deploy/grafana's dashboard queries is one /metrics exposes
        (after training, with an RPC of each kind so the RPC families have samples)."""
        self.stub.CreateModel(pb.CreateModelRequest(
            model_id="m", config=pb.ModelConfig(dimension=3, gamma=0.1, comparator=[1, 0, 0])))
        pp.learn(pb, self.stub, "m", [([1.0, 0.5, 0.0], 1), ([-1.0, 0.2, 0.1], -1)])
        until("the certificate", lambda: self.status("m").stats.certificate.available, bool)
        _, _, body = self.server.get("/metrics")
        names = {name for name, _ in exposed(body)} | {"up"}
        families = {f.name for f in text_string_to_metric_families(body)}
        with open(os.path.join(DEPLOY, "grafana", "dashboards", "perceptrond.json")) as f:
            dashboard = json.load(f)
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        self.assertGreaterEqual(len(exprs), 8)
        for expr in exprs:
            with self.subTest(expr=expr):
                # Series names, not label names: drop "by (...)" and "{...}" first.
                bare = re.sub(r"\b(by|without)\s*\([^)]*\)|\{[^}]*\}", "", expr)
                used = set(re.findall(r"\b((?:perceptron|grpc)_[a-z_]+|up)\b", bare))
                self.assertTrue(used, "the query names no series")
                for name in used:
                    self.assertTrue(name in names or name in families, name)

