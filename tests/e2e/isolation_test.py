"""What one server, one caller or one id may not do to another, through real processes: a
second perceptrond on a taken gRPC port, data directory or HTTP port fails to start with a
clear message (and the first goes on serving); ListModels pages and their tokens show a
prefix-limited caller nothing outside its prefixes; ids of dots only are refused, and ids at
the contract's edges work over gRPC and the JSON API.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import base64
import json
import os
import subprocess
import tempfile
import unittest

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")
STUBS = pp.setting("PERCEPTRON_STUBS")
pb, pb_grpc = pp.import_stubs(STUBS)
import grpc  # noqa: E402


def start_fails(*flags):
    """Runs a perceptrond that must refuse to start: (exit code, stderr)."""
    run = subprocess.run([PERCEPTROND, *flags], capture_output=True, text=True, timeout=60)
    return run.returncode, run.stderr


class SecondServerTest(unittest.TestCase):
    def setUp(self):
        self.first = pp.Perceptrond(PERCEPTROND, "--durability=sync")
        self.channel = grpc.insecure_channel(self.first.target)
        self.stub = pb_grpc.PerceptronServiceStub(self.channel)
        self.stub.CreateModel(pb.CreateModelRequest(
            model_id="only-here", config=pb.ModelConfig(dimension=3)))
        self.other = tempfile.TemporaryDirectory(prefix="perceptrond-other-")

    def tearDown(self):
        # The first server still serves its model, and stops cleanly.
        self.assertEqual(self.stub.GetModel(pb.GetModelRequest(model_id="only-here")).model_id,
                         "only-here")
        self.channel.close()
        self.other.cleanup()
        self.assertEqual(self.first.stop(), 0)

    def test_a_taken_grpc_port_is_refused(self):
        code, err = start_fails("--port=%d" % self.first.port, "--http_port=0",
                                "--data_dir=" + self.other.name + "/data")
        self.assertEqual(code, 1, err)
        self.assertIn("cannot listen on 127.0.0.1:%d" % self.first.port, err)
        self.assertIn("in use", err)

    def test_a_data_directory_in_use_is_refused(self):
        code, err = start_fails("--port=0", "--http_port=0",
                                "--data_dir=" + self.first.dir.name + "/data")
        self.assertEqual(code, 1, err)
        self.assertIn("is in use by another perceptrond", err)

    def test_a_taken_http_port_is_refused(self):
        code, err = start_fails("--port=0", "--http_port=%d" % self.first.http_port,
                                "--data_dir=" + self.other.name + "/data")
        self.assertEqual(code, 1, err)
        self.assertIn("cannot serve HTTP on 127.0.0.1:%d" % self.first.http_port, err)
        self.assertIn("Address already in use", err)
        self.assertNotIn("null context", err)


class ListingTest(unittest.TestCase):
    def setUp(self):
        self.tokens = tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False)
        self.tokens.write("admin-token-0123456789 admin\nteam-a-token-0123456789 read team-a\n")
        self.tokens.close()
        self.server = pp.Perceptrond(PERCEPTROND, "--durability=none",
                                     "--tokens_file=" + self.tokens.name)
        self.channel = grpc.insecure_channel(self.server.target)
        self.stub = pb_grpc.PerceptronServiceStub(self.channel)
        admin = (("authorization", "Bearer admin-token-0123456789"),)
        # Hidden ids sort between and around the visible ones.
        for model_id in ["a-hidden", "secret-project-x", "team-a-1", "team-a-2", "team-a-3",
                         "team-b", "zzz-hidden"]:
            self.stub.CreateModel(pb.CreateModelRequest(
                model_id=model_id, config=pb.ModelConfig(dimension=2)), metadata=admin)

    def tearDown(self):
        self.channel.close()
        os.unlink(self.tokens.name)
        self.assertEqual(self.server.stop(), 0)

    def pages(self, token, page_size):
        metadata = (("authorization", "Bearer " + token),)
        seen, tokens, page_token = [], [], ""
        while True:
            r = self.stub.ListModels(pb.ListModelsRequest(page_size=page_size,
                                                          page_token=page_token),
                                     metadata=metadata)
            seen.append([m.model_id for m in r.models])
            if not r.next_page_token:
                return seen, tokens
            tokens.append(r.next_page_token)
            page_token = r.next_page_token

    def test_pages_and_tokens_show_only_what_the_caller_may_see(self):
        seen, tokens = self.pages("team-a-token-0123456789", 1)
        # Full pages of visible models only, and no empty page between them.
        self.assertEqual(seen, [["team-a-1"], ["team-a-2"], ["team-a-3"]])
        for t in tokens:
            self.assertNotIn("hidden", t)
            self.assertNotIn("secret", t)
            decoded = base64.urlsafe_b64decode(t + "=" * (-len(t) % 4)).decode()
            self.assertNotIn("hidden", decoded)
            self.assertNotIn("secret", decoded)
            self.assertTrue(decoded.endswith(("team-a-1", "team-a-2")), decoded)
        # The admin pages over everything.
        seen, _ = self.pages("admin-token-0123456789", 3)
        self.assertEqual(sum(seen, []), ["a-hidden", "secret-project-x", "team-a-1", "team-a-2",
                                         "team-a-3", "team-b", "zzz-hidden"])
        # A token the server did not issue is refused, not read as an id.
        with self.assertRaises(grpc.RpcError) as bad:
            self.stub.ListModels(pb.ListModelsRequest(page_token="secret-project-x"),
                                 metadata=(("authorization", "Bearer team-a-token-0123456789"),))
        self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_the_json_api_shows_only_what_the_caller_may_see(self):
        status, _, body = self.server.get("/api/v1/models", token="team-a-token-0123456789")
        self.assertEqual(status, 200)
        self.assertEqual([m["model_id"] for m in json.loads(body)["models"]],
                         ["team-a-1", "team-a-2", "team-a-3"])
        for path in ["/api/v1/models/secret-project-x", "/api/v1/models/no-such-model",
                     "/api/v1/models/secret-project-x/history"]:
            # The same answer for a hidden model and a missing one.
            self.assertEqual(self.server.get(path, token="team-a-token-0123456789")[0], 403, path)
        metrics = self.server.get("/metrics", token="team-a-token-0123456789")[2]
        self.assertIn('model="team-a-1"', metrics)
        self.assertNotIn("hidden", metrics)
        self.assertNotIn("secret", metrics)


class ModelIdTest(pp.ServerTest):
    EDGES = ["a", "-", "_", "Z9", ".a", "a.", "a..b", "._-", "x" * 128, "." * 127 + "-"]

    binary = PERCEPTROND
    stubs = pb_grpc

    def test_dots_only_are_refused_and_the_edges_work_everywhere(self):
        for model_id in [".", "..", "...", "." * 128]:
            with self.assertRaises(grpc.RpcError) as bad:
                self.stub.CreateModel(pb.CreateModelRequest(
                    model_id=model_id, config=pb.ModelConfig(dimension=2)))
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("only dots", bad.exception.details())
        for model_id in ["", "x" * 129, "a/b", "a b"]:
            with self.assertRaises(grpc.RpcError) as bad:
                self.stub.CreateModel(pb.CreateModelRequest(
                    model_id=model_id, config=pb.ModelConfig(dimension=2)))
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        stream = pp.Stream(d=2, seed=5)
        for model_id in self.EDGES:
            self.stub.CreateModel(pb.CreateModelRequest(
                model_id=model_id, config=pb.ModelConfig(dimension=2)))
            pp.learn(pb, self.stub, model_id, [stream.next() for _ in range(50)])
        status, _, body = self.server.get("/api/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(m["model_id"] for m in json.loads(body)["models"]),
                         sorted(self.EDGES))
        for model_id in self.EDGES:
            status, _, body = self.server.get("/api/v1/models/" + model_id)
            self.assertEqual(status, 200, model_id)
            self.assertEqual(json.loads(body)["model_id"], model_id)
            self.assertEqual(int(json.loads(body)["stats"]["examples"]), 50)
            status, _, body = self.server.get("/api/v1/models/" + model_id + "/history")
            self.assertEqual(status, 200, model_id)
            self.assertEqual(json.loads(body)["model_id"], model_id)

