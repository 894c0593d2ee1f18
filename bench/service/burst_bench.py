"""Memory after hostile bursts (issue 51, docs/benchmarks.md "Memory after bursts"): a server with a
model streamed at durability sync, then three bursts, each from a client process that is killed
when the burst is done (its connections reset, as a client that goes away leaves them):
  - 2,000 Learn streams opened over 20 connections, one request sent on each, never finished;
  - 200 idle TCP connections to the gRPC port;
  - a writer of 400 KB Learn requests that never reads an answer (its stream stays open);
  - 20 HTTP clients sending their request headers a few bytes at a time.
Prints the server's RSS (VmRSS) at the baseline and 30 s after each burst ends, and what the
server's /metrics says of its memory.

    PYTHONPATH=BUILD/python /usr/bin/python3 burst_bench.py PERCEPTROND [SECONDS_AFTER [BURSTS [FLAG...]]]
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import grpc
from perceptron.v1 import perceptron_pb2 as pb
from perceptron.v1 import perceptron_pb2_grpc as pb_grpc

DIMENSION = 20


def proc_field(pid, file, key):
    """The number after `key` in /proc/PID/FILE (kB for memory), or NaN."""
    with open(f"/proc/{pid}/{file}") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return float("nan")


def threads(pid):
    return proc_field(pid, "status", "Threads:")


def anon_mb(pid):
    return proc_field(pid, "smaps_rollup", "Anonymous:") / 1024


def rss_mb(pid):
    return proc_field(pid, "status", "VmRSS:") / 1024


def examples(n, seed):
    import random
    r = random.Random(seed)
    items = []
    for _ in range(n):
        x = [r.uniform(-1, 1) for _ in range(DIMENSION)]
        items.append(pb.LearnItem(labeled=pb.LabeledExample(
            features=pb.Features(dense=pb.DenseVector(values=x)),
            label=1 if x[0] >= 0 else -1)))
    return items


def burst(target, http):
    """Runs in a child process, which the parent kills once it says it is done."""
    host, port = target.rsplit(":", 1)
    hhost, hport = http.rsplit(":", 1)
    held = []
    # 2,000 streams over 20 connections, one request each, never finished.
    item = examples(1, 7)[0]
    for c in range(20):
        channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
        stub = pb_grpc.PerceptronServiceStub(channel)
        held.append(channel)
        for s in range(100):
            gate = threading.Event()

            def requests(gate=gate):
                yield pb.LearnRequest(model_id="m", items=[item])
                gate.wait()  # never set: the stream stays open
            held.append(stub.Learn(requests()))
            held.append(gate)
    # 200 idle connections.
    for _ in range(200):
        held.append(socket.create_connection((host, int(port))))
    # A writer of 400 KB requests that never reads.
    big = pb.LearnRequest(model_id="m", items=examples(2000, 8))
    channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    stub = pb_grpc.PerceptronServiceStub(channel)

    def flood():
        while True:
            yield big
    held.append(stub.Learn(flood()))
    # 20 slow HTTP clients.
    for _ in range(20):
        s = socket.create_connection((hhost, int(hport)))
        s.sendall(b"GET /api/v1/models HTTP/1.1\r\nHo")
        held.append(s)
    time.sleep(5)  # let the server take it all in
    print("burst ready", flush=True)
    time.sleep(3600)


def main():
    binary = sys.argv[1]
    after = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    bursts = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    flags = sys.argv[4:]  # more of the server's flags
    data = tempfile.mkdtemp(prefix="burst-")
    server = subprocess.Popen([binary, "--port=0", "--http_port=0", "--data_dir=" + data] + flags,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    target = http = None
    while target is None or http is None:
        line = server.stdout.readline()
        if not line:
            raise SystemExit("perceptrond did not start")
        m = re.search(r"listening on (\S+)", line)
        target = m.group(1) if m else target
        m = re.search(r"http on (\S+)", line)
        http = m.group(1) if m else http
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
    channel = grpc.insecure_channel(target)
    stub = pb_grpc.PerceptronServiceStub(channel)
    stub.CreateModel(pb.CreateModelRequest(model_id="m", config=pb.ModelConfig(dimension=DIMENSION)))
    warm = examples(64, 1)
    list(stub.Learn(iter([pb.LearnRequest(model_id="m", items=warm)] * 2000)))
    time.sleep(after)
    base = rss_mb(server.pid)
    print(f"baseline: RSS {base:.1f} MB (anonymous {anon_mb(server.pid):.1f} MB), "
          f"{threads(server.pid)} threads", flush=True)
    for k in range(1, bursts + 1):
        child = subprocess.Popen([sys.executable, __file__, "--burst", target, http],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "burst ready"
        peak = rss_mb(server.pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        time.sleep(after)
        now = rss_mb(server.pid)
        metrics = urllib.request.urlopen(f"http://{http}/metrics", timeout=10).read().decode()
        mem = [l for l in metrics.splitlines()
               if l.startswith(("process_resident_memory_bytes", "perceptron_memory"))]
        print(f"burst {k}: RSS {peak:.1f} MB during it, {now:.1f} MB {after:.0f} s after "
              f"({now - base:+.1f} MB over the baseline; anonymous {anon_mb(server.pid):.1f} MB), "
              f"{threads(server.pid)} threads; {' '.join(mem)}", flush=True)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--burst":
        burst(sys.argv[2], sys.argv[3])
    else:
        main()
