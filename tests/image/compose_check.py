"""The compose deployment's Prometheus scrapes its perceptrond: the demo model's example count in
Prometheus (queried through its HTTP API) reaches the count the server reports, its scrape target
is up, and the alerting rules of deploy/prometheus are loaded.
Usage: compose_check.py GRPC_TARGET PROMETHEUS_HOST_PORT CLI"""
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

grpc_target, prometheus, cli = sys.argv[1:4]


def query(expr):
    url = "http://%s/api/v1/query?%s" % (prometheus, urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


status = subprocess.run([cli, "--server=" + grpc_target, "status", "demo", "--format=json"],
                        check=True, capture_output=True, text=True).stdout
examples = int(json.loads(status)["stats"]["examples"])
assert examples > 0, status

# Prometheus scrapes every 15 s (deploy/prometheus/prometheus.yml): wait at most 120 s for a
# scrape after the demo's stream ended.
deadline = time.monotonic() + 120
seen = None
while time.monotonic() < deadline:
    try:
        result = query('perceptron_model_examples_total{model="demo"}')
    except OSError:
        result = []  # Prometheus still starting
    if result:
        seen = int(float(result[0]["value"][1]))
        if seen == examples:
            break
    time.sleep(1)  # the pause between polls of the next scrape
assert seen == examples, "Prometheus has %s examples of demo, the server %d" % (seen, examples)
up = query('up{job="perceptrond"}')
assert [r["value"][1] for r in up] == ["1"], up
with urllib.request.urlopen("http://%s/api/v1/rules" % prometheus, timeout=10) as r:
    rules = [rule["name"] for g in json.load(r)["data"]["groups"] for rule in g["rules"]]
assert len(rules) >= 6, rules
print("image_test: Prometheus scraped demo's %d examples; target up; %d alerting rules loaded"
      % (examples, len(rules)))
