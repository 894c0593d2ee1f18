"""A full disk (docs/operations.md "A full disk"): the data directory on a tmpfs of the test's own,
16 MB, mounted for the test (root only: CI runs as root), and again on an ext4 file system of 30 MB
in a file mounted through a loop device, where the store's log files are written over zeros
beforehand (docs/design.md section 5: a spare of 5 MiB and the current log's 5 MiB are taken
before the disk fills, so the log goes on over them after it is full, until LevelDB needs a new
file). The certificate's kept rows, an auxiliary
of each model, give way first: once they would leave less than --rows_reserve_mb free for the log,
that model's certificate freezes and says why, its rows file is deleted, and the log goes on: every
batch is acknowledged, the store never fails, other models keep theirs, and a restart brings
everything back as it was. (A rows file that cannot be written at all gives way the same way:
tests/server/storage/rows_give_way_test.cc.)
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import json
import os
import random
import subprocess
import tempfile
import time
import unittest

import grpc

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")
CLI = pp.setting("PERCEPTRON_CLI")
pb, pb_grpc = pp.import_stubs(pp.setting("PERCEPTRON_STUBS"))

D = 1000


def examples(rng, u, n):
    """Rows of d=1000 (8 KB each kept), well separated by u: few mistakes, so the log stays
    small while the kept rows grow."""
    out = []
    for _ in range(n):
        y = 1 if rng.random() < 0.5 else -1
        out.append(([rng.gauss(0, 1) + 0.2 * y * v for v in u], y))
    return out


def counts(stats):
    return stats.examples, stats.mistakes, stats.updates


def samples(text):
    return {line.split(" ")[0]: float(line.split(" ")[-1]) for line in text.splitlines()
            if line.startswith("perceptron_storage_")}


def store_health(channel):
    """gRPC health's status of the service "perceptrond.store" (the message written by hand: the
    health stubs are not in Debian's python3-grpcio)."""
    name = b"perceptrond.store"
    reply = channel.unary_unary("/grpc.health.v1.Health/Check")(
        b"\n" + bytes([len(name)]) + name, timeout=30)
    return {b"\x08\x01": "SERVING", b"\x08\x02": "NOT_SERVING"}[reply]


def fill(path):
    """Fills the file system holding `path` to the last byte, with `path` (appended to)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def wait_for(what, condition):
    end = time.monotonic() + 60
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(what)
        time.sleep(0.05)  # a poll's pause


@unittest.skipUnless(os.geteuid() == 0, "mounts a tmpfs of its own: run as root, as CI does")
class DiskFullTest(unittest.TestCase):
    # Batches streamed onto a full disk before one must fail.
    BATCHES = 500

    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="perceptrond-full-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", self.mount],
                       check=True)
        self.data = os.path.join(self.mount, "data")

    def tearDown(self):
        subprocess.run(["umount", self.mount], check=True)
        os.rmdir(self.mount)

    def start(self):
        # 8 MB of the 16 kept for the log.
        server = pp.Perceptrond(PERCEPTROND, "--durability=sync", "--rows_reserve_mb=8",
                                data_dir=self.data)
        channel = grpc.insecure_channel(server.target)
        return server, channel, pb_grpc.PerceptronServiceStub(channel)

    def status(self, stub, model_id):
        return stub.GetStatus(pb.GetStatusRequest(model_id=model_id)).stats

    def test_the_certificates_rows_give_way_and_the_log_goes_on(self):
        rng = random.Random(5)
        u = [rng.gauss(0, 1) for _ in range(D)]
        server, channel, stub = self.start()
        try:
            for name, d in (("big", D), ("small", 4)):
                stub.CreateModel(pb.CreateModelRequest(model_id=name,
                                                       config=pb.ModelConfig(dimension=d)))
            small = pp.Stream(d=4, seed=6)
            pp.learn(pb, stub, "small", [small.next() for _ in range(200)])
            # 3,000 rows of 8 KB: 24 MB to keep, on 16 MB. The first 300 until the certificate
            # has a solution (so it freezes at it, rather than turning off without one).
            responses = pp.learn(pb, stub, "big", examples(rng, u, 300), batch=50)
            end = time.monotonic() + 60
            while not self.status(stub, "big").certificate.available:
                self.assertLess(time.monotonic(), end, "no first solution")
                time.sleep(0.01)  # a poll's pause
            responses += pp.learn(pb, stub, "big", examples(rng, u, 2700), batch=50)
            self.assertEqual(len(responses), 60)
            self.assertEqual([r.error for res in responses for r in res.results
                              if r.HasField("error")], [])
            st = self.status(stub, "big")
            self.assertEqual(st.examples, 3000)
            c = st.certificate
            self.assertEqual(c.state, pb.Certificate.FROZEN, c)
            self.assertTrue(c.reason.startswith("the examples kept for it could not be stored "
                                                "(the data directory's file system has "),
                            c.reason)
            self.assertIn("MiB free and keeps 8 MiB of it for the log: --rows_reserve_mb); the "
                          "log goes on without them", c.reason)
            # Still a bound on the updates over every example.
            self.assertTrue(c.available)
            self.assertEqual(c.examples, 3000)
            self.assertLessEqual(st.updates, c.upper)
            metrics = samples(server.get("/metrics")[2])
            self.assertEqual(metrics["perceptron_storage_failed"], 0)
            self.assertEqual(metrics["perceptron_storage_rows_gave_way_total"], 1)
            # The big model's rows file is gone, the space with it; the small model keeps its
            # own, in its records (a batch's few rows wait in the log: --rows_waiting_kb).
            rows = os.listdir(os.path.join(self.data, "rows"))
            self.assertEqual([f for f in rows if f.startswith("big.")], [])
            free = os.statvfs(self.mount)
            self.assertGreater(free.f_bavail * free.f_frsize, 8 << 20)
            self.assertEqual(self.status(stub, "small").certificate.state,
                             pb.Certificate.KEEPING)
            # Both go on learning, acknowledged and stored.
            pp.learn(pb, stub, "big", examples(rng, u, 200), batch=50)
            pp.learn(pb, stub, "small", [small.next() for _ in range(100)])
            before = {m: self.status(stub, m) for m in ("big", "small")}
            self.assertEqual(before["big"].examples, 3200)
            channel.close()
        finally:
            self.assertEqual(server.stop(), 0)
        # A restart: everything as it was, the big model's certificate frozen as it froze.
        server, channel, stub = self.start()
        try:
            for m in ("big", "small"):
                after = self.status(stub, m)
                self.assertEqual(counts(after), counts(before[m]))
            c = self.status(stub, "small").certificate
            self.assertEqual((c.state, c.kept), (pb.Certificate.KEEPING, 300), c)
            was, now = before["big"].certificate, self.status(stub, "big").certificate
            self.assertEqual((now.state, now.reason, now.upper, now.lower, now.frozen_at),
                             (was.state, was.reason, was.upper, was.lower, was.frozen_at))
            # A reset keeps examples again, on a disk with room.
            stub.ResetModel(pb.ResetModelRequest(model_id="big"))
            pp.learn(pb, stub, "big", examples(rng, u, 300), batch=50)
            c = self.status(stub, "big").certificate
            self.assertEqual(c.state, pb.Certificate.KEEPING, c)
            self.assertEqual(c.kept, 300)
            channel.close()
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_log_that_cannot_be_written_refuses_changes_then_resumes_by_itself(self):
        """The disk full of something else: LevelDB's own log cannot grow. The batch whose record
        failed is not acknowledged, later changes are refused before they are applied, reads go on,
        and once there is room again the store writes by itself, with every model as acknowledged
        (the failed batch undone), no restart needed; a restart then brings back the same."""
        rng = random.Random(7)
        server, channel, stub = self.start()
        filler = os.path.join(self.mount, "filler")
        try:
            for name in ("m", "other"):
                stub.CreateModel(pb.CreateModelRequest(model_id=name,
                                                       config=pb.ModelConfig(dimension=50)))
            def batch(n=64):
                # Labels at random: about half are mistakes, so every record changes weights.
                return [([rng.gauss(0, 1) for _ in range(50)], rng.choice((-1, 1)))
                        for _ in range(n)]
            pp.learn(pb, stub, "m", batch(256))
            pp.learn(pb, stub, "other", batch(128))
            acked = 256
            other = self.status(stub, "other")
            self.assertEqual(store_health(channel), "SERVING")
            fill(filler)
            failure = None
            for _ in range(self.BATCHES):
                try:
                    pp.learn(pb, stub, "m", batch())
                    acked += 64
                except grpc.RpcError as e:
                    failure = e
                    break
            self.assertIsNotNone(failure, "every batch was stored on a full disk")
            self.assertEqual(failure.code(), grpc.StatusCode.UNAVAILABLE, failure)
            self.assertIn("the store cannot write (", failure.details())
            self.assertIn("No space left on device", failure.details())
            # Whatever the failure freed (the rows files given way before it) is taken too: the
            # store, opened again every second, cannot write until the test frees room.
            fill(filler)
            # From now on a change is refused before it is applied: the model stays as it is.
            seen = self.status(stub, "m").examples
            for model_id in ("m", "other", "m"):
                with self.assertRaises(grpc.RpcError) as refused:
                    pp.learn(pb, stub, model_id, batch())
                self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)
                self.assertIn("nothing was applied: changes are refused until it writes again",
                              refused.exception.details())
            self.assertEqual(self.status(stub, "m").examples, seen)
            for call in (lambda: stub.CreateModel(pb.CreateModelRequest(
                             model_id="new", config=pb.ModelConfig(dimension=2))),
                         lambda: stub.DeleteModel(pb.DeleteModelRequest(model_id="other")),
                         lambda: stub.ResetModel(pb.ResetModelRequest(model_id="other"))):
                with self.assertRaises(grpc.RpcError) as refused:
                    call()
                self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)
            # Reads go on; health, the server's status and /metrics say why.
            self.assertEqual(sorted(m.model_id for m in stub.ListModels(
                pb.ListModelsRequest()).models), ["m", "other"])
            code, _, body = server.get("/healthz")
            self.assertEqual(code, 200)
            self.assertIn("the store cannot write (", body)
            self.assertEqual(samples(server.get("/metrics")[2])["perceptron_storage_failed"], 1)
            status = stub.GetServerStatus(pb.GetServerStatusRequest())
            self.assertFalse(status.store_writing)
            self.assertIn("the store cannot write (", status.store_error)
            self.assertEqual(status.models, 2)
            self.assertGreater(status.resident_memory_bytes, 0)
            as_json = json.loads(server.get("/api/v1/server")[2])
            self.assertEqual(as_json["store_error"], status.store_error)
            self.assertIs(as_json["store_writing"], False)
            health = subprocess.run([CLI, "--server=" + server.target, "health"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(health.returncode, 0, health.stderr)  # it serves: reads go on
            self.assertIn("SERVING\n2 models, durability sync; ", health.stdout)
            self.assertIn("\nthe store cannot write (", health.stdout)
            # gRPC health's store service, checked every second.
            wait_for("health still says the store serves",
                     lambda: store_health(channel) == "NOT_SERVING")
            # Room again: the store writes by itself within a few seconds.
            os.unlink(filler)
            wait_for("the store did not write again",
                     lambda: samples(server.get("/metrics")[2])["perceptron_storage_failed"] == 0)
            metrics = samples(server.get("/metrics")[2])
            self.assertEqual(metrics["perceptron_storage_resumed_total"], 1)
            # m, whose batch failed; and other too when its certificate's last solution, which
            # goes to the log in the background, was among the records that failed (the
            # refresher's timing). Either way other is as acknowledged (below).
            self.assertIn(metrics["perceptron_storage_models_restored_total"], (1, 2))
            status = stub.GetServerStatus(pb.GetServerStatusRequest())
            self.assertTrue(status.store_writing)
            self.assertEqual((status.store_error, status.store_resumed), ("", 1))
            self.assertEqual(server.get("/healthz")[2], "SERVING\n")
            wait_for("health still says the store fails",
                     lambda: store_health(channel) == "SERVING")
            # Every model as acknowledged: the batch that failed is undone.
            self.assertEqual(self.status(stub, "m").examples, acked)
            after = self.status(stub, "other")
            self.assertEqual(counts(after), counts(other))
            pp.learn(pb, stub, "m", batch())
            pp.learn(pb, stub, "other", batch())
            before = {m: self.status(stub, m) for m in ("m", "other")}
            self.assertEqual(before["m"].examples, acked + 64)
            channel.close()
        finally:
            if os.path.exists(filler):
                os.unlink(filler)
            self.assertEqual(server.stop(), 0)
        server, channel, stub = self.start()
        try:
            for m in ("m", "other"):
                now = self.status(stub, m)
                self.assertEqual(counts(now), counts(before[m]))
            channel.close()
        finally:
            self.assertEqual(server.stop(), 0)


@unittest.skipUnless(os.geteuid() == 0, "mounts a loop device of its own: run as root, as CI does")
class DiskFullExt4Test(DiskFullTest):
    """The same on ext4, whose log files are prewritten (nothing is prewritten on a tmpfs)."""
    # The log writes over the zeros written before the disk filled: a batch fails once LevelDB
    # needs a new file (its table for the memtable past 4 MiB of log, or the next log).
    BATCHES = 20000

    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="perceptrond-full-")
        self.image = self.mount + ".img"
        subprocess.run(["truncate", "-s", "30M", self.image], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", self.image], check=True)
        subprocess.run(["mount", "-o", "loop", self.image, self.mount], check=True)
        self.data = os.path.join(self.mount, "data")

    def tearDown(self):
        # The spare log file was prewritten: this is ext4, not a tmpfs.
        spare = os.path.exists(os.path.join(self.data, "perceptrond-log-spare"))
        subprocess.run(["umount", self.mount], check=True)
        os.rmdir(self.mount)
        os.unlink(self.image)
        self.assertTrue(spare, "no spare log file: nothing was prewritten")


if __name__ == "__main__":
    unittest.main()
