"""deploy/: the compose file and Kubernetes manifests parse, and they, the Dockerfile and the
image's flags agree on ports, volume and health checks.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import os
import re
import unittest

import yaml

DEPLOY = os.environ["PERCEPTRON_DEPLOY"]


def read(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return f.read()


class DeployTest(unittest.TestCase):
    def setUp(self):
        flags = dict(re.findall(r"^--(\w+)=(\S+)$", read("perceptrond.flags"), re.M))
        self.grpc, self.http = int(flags["port"]), int(flags["http_port"])
        self.flags = flags

    def test_dockerfile(self):
        d = read("Dockerfile")
        self.assertIn("FROM debian:12 AS build", d)
        self.assertIn("scripts/setup.sh --build-only", d)
        self.assertIn("FROM debian:12-slim", d)
        self.assertRegex(d, r"\nUSER perceptrond\n")
        self.assertIn("VOLUME /var/lib/perceptrond", d)
        self.assertTrue(self.flags["data_dir"].startswith("/var/lib/perceptrond/"))
        self.assertEqual(self.flags["host"], "0.0.0.0")
        self.assertIn("EXPOSE %d %d" % (self.grpc, self.http), d)
        self.assertIn('"perceptron", "health", "--server=127.0.0.1:%d"' % self.grpc, d)

    def test_compose(self):
        # Published ports as compose interpolates them with no environment set: their defaults.
        text = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", read("docker-compose.yml"))
        c = yaml.safe_load(text)
        server = c["services"]["perceptrond"]
        self.assertEqual(server["build"]["dockerfile"], "deploy/Dockerfile")
        self.assertIn("%d:%d" % (self.grpc, self.grpc), server["ports"])
        self.assertIn("%d:%d" % (self.http, self.http), server["ports"])
        self.assertIn("perceptrond-data:/var/lib/perceptrond", server["volumes"])
        self.assertIn("perceptrond-data", c["volumes"])
        # Prometheus scrapes the server's HTTP port with deploy/prometheus's rules; Grafana reads
        # that Prometheus and deploy/grafana's dashboard.
        prometheus = c["services"]["prometheus"]
        self.assertIn("./prometheus:/etc/prometheus:ro", prometheus["volumes"])
        config = yaml.safe_load(read("prometheus/prometheus.yml"))
        self.assertEqual(config["rule_files"], ["rules.yml"])
        self.assertEqual(config["scrape_configs"][0]["static_configs"][0]["targets"],
                         ["perceptrond:%d" % self.http])
        grafana = c["services"]["grafana"]
        self.assertIn("./grafana/dashboards:/var/lib/grafana/dashboards:ro", grafana["volumes"])
        source = yaml.safe_load(read("grafana/provisioning/datasources/prometheus.yml"))
        self.assertEqual(source["datasources"][0]["url"], "http://prometheus:9090")
        self.assertIn("9090:9090", prometheus["ports"])
        # Debian's Prometheus, built from deploy/prometheus/Dockerfile.
        self.assertEqual(prometheus["build"]["context"], "prometheus")
        self.assertIn("apt-get install -y --no-install-recommends prometheus",
                      read("prometheus/Dockerfile"))
        demo = c["services"]["demo"]
        self.assertEqual(demo["depends_on"]["perceptrond"]["condition"], "service_healthy")
        self.assertIn("--server=perceptrond:%d" % self.grpc, demo["command"][0])
        self.assertIn("perceptron generate", demo["command"][0])

    def test_kubernetes(self):
        docs = list(yaml.safe_load_all(read("k8s/perceptrond.yaml")))
        kinds = {d["kind"]: d for d in docs}
        self.assertEqual(set(kinds), {"Service", "StatefulSet"})
        services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
        kinds["Service"] = services["perceptrond"]
        ports = {p["name"]: p["port"] for p in kinds["Service"]["spec"]["ports"]}
        self.assertEqual(ports, {"grpc": self.grpc, "http": self.http})
        sts = kinds["StatefulSet"]["spec"]
        # The StatefulSet's serviceName must name a headless Service (no cluster IP) selecting
        # its pods: that is what gives each pod its DNS name.
        governing = services[sts["serviceName"]]["spec"]
        self.assertEqual(governing["clusterIP"], "None")
        self.assertEqual(governing["selector"], sts["selector"]["matchLabels"])
        self.assertNotEqual(kinds["Service"]["spec"].get("clusterIP"), "None")
        pod = sts["template"]["spec"]
        c = pod["containers"][0]
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            self.assertEqual(c[probe]["grpc"]["port"], self.grpc, probe)
        self.assertEqual(c["volumeMounts"][0]["mountPath"], "/var/lib/perceptrond")
        self.assertEqual(sts["volumeClaimTemplates"][0]["metadata"]["name"],
                         c["volumeMounts"][0]["name"])
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(kinds["Service"]["spec"]["selector"],
                         sts["selector"]["matchLabels"])

    def test_shards(self):
        """deploy/k8s/shards.yaml and docker-compose.shards.yml put deploy/nginx/nginx.conf (the
        file shards_test runs) in front of shards with the names its upstream lists."""
        conf = read("nginx/nginx.conf")
        upstream = re.findall(r"server (perceptrond-\d)\.perceptrond:(\d+) max_fails=0;", conf)
        self.assertEqual(upstream, [("perceptrond-%d" % i, str(self.grpc)) for i in range(3)])
        docs = list(yaml.safe_load_all(read("k8s/shards.yaml")))
        by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
        sts = by[("StatefulSet", "perceptrond")]["spec"]
        self.assertEqual(sts["replicas"], len(upstream))
        headless = by[("Service", sts["serviceName"])]["spec"]
        self.assertEqual(headless["clusterIP"], "None")
        self.assertTrue(headless["publishNotReadyAddresses"])
        self.assertEqual(headless["selector"], sts["selector"]["matchLabels"])
        self.assertEqual(by[("ConfigMap", "perceptrond-proxy")]["data"]["nginx.conf"], conf)
        pdb = by[("PodDisruptionBudget", "perceptrond")]["spec"]
        self.assertEqual(pdb["selector"]["matchLabels"], sts["selector"]["matchLabels"])
        self.assertEqual(sts["volumeClaimTemplates"][0]["metadata"]["name"],
                         sts["template"]["spec"]["containers"][0]["volumeMounts"][0]["name"])
        compose = yaml.safe_load(read("docker-compose.shards.yml"))
        for name, _ in upstream:
            aliases = compose["services"][name]["networks"]["default"]["aliases"]
            self.assertIn(name + ".perceptrond", aliases)
        self.assertIn("./nginx/nginx.conf:/etc/nginx/nginx.conf:ro",
                      compose["services"]["proxy"]["volumes"])

