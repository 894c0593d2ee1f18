"""Finite input that would overflow a double, through real processes: what the independent
hostile client found. Each item that would make a score, a weight or TD_gamma non-finite is
refused as its own INVALID_ARGUMENT with the model unchanged; configs that make overflow
certain are refused; every acknowledged item survives SIGTERM and restart (with snapshots
after every record too), and export/import round-trips.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import math
import tempfile
import unittest

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")
STUBS = pp.setting("PERCEPTRON_STUBS")
pb, pb_grpc = pp.import_stubs(STUBS)
import grpc  # noqa: E402


def sparse(item, pairs):
    for i, v in pairs:
        item.sparse.indices.append(i)
        item.sparse.values.append(v)


class OverflowTest(unittest.TestCase):
    def setUp(self):
        self.data = tempfile.TemporaryDirectory(prefix="perceptrond-overflow-")
        self.flags = ["--durability=sync"]
        self.server = None

    def tearDown(self):
        if self.server is not None:
            self.assertEqual(self.server.stop(), 0)
        self.data.cleanup()

    def start(self, *extra):
        self.server = pp.Perceptrond(PERCEPTROND, *self.flags, *extra,
                                     data_dir=self.data.name + "/data")
        self.channel = grpc.insecure_channel(self.server.target)
        self.stub = pb_grpc.PerceptronServiceStub(self.channel)

    def restart(self, *extra):
        self.channel.close()
        self.assertEqual(self.server.stop(), 0)
        self.start(*extra)
        return self.server.stderr_text()

    def learn(self, model_id, examples):
        """One Learn request of labeled sparse examples [(label, [(index, value)])]; results."""
        r = pb.LearnRequest(model_id=model_id)
        for label, pairs in examples:
            item = r.items.add()
            item.labeled.label = label
            sparse(item.labeled.features, pairs)
        return list(self.stub.Learn(iter([r])))[0]

    def issue(self, model_id, pairs):
        r = pb.LearnRequest(model_id=model_id)
        sparse(r.items.add().example, pairs)
        return list(self.stub.Learn(iter([r])))[0]

    def status(self, model_id):
        return self.stub.GetStatus(pb.GetStatusRequest(model_id=model_id)).stats

    def weights(self, model_id):
        return list(self.stub.GetWeights(pb.GetWeightsRequest(model_id=model_id)).values)

    def check_huge_features(self, *extra):
        self.start(*extra)
        self.stub.CreateModel(pb.CreateModelRequest(model_id="m", config=pb.ModelConfig(
            dimension=2, normalize=False)))
        first = self.learn("m", [(1, [(0, 1.3e154)]), (-1, [(1, 1.3e154)])])
        self.assertFalse(any(r.HasField("error") for r in first.results))
        # The score would be 2.3e308 + ... = inf: refused, and nothing is kept pending.
        refused = self.issue("m", [(0, 0.9e154), (1, -0.9e154)])
        self.assertTrue(refused.results[0].HasField("error"))
        self.assertEqual(refused.results[0].error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("not a finite double", refused.results[0].error.message)
        with self.assertRaises(grpc.RpcError) as bad:
            self.stub.Predict(pb.PredictRequest(model_id="m", examples=[pb.Features(
                sparse=pb.SparseVector(indices=[0, 1], values=[0.9e154, -0.9e154]))]))
        self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # A labeled example whose score overflows, between two good ones: refused alone.
        before = self.weights("m")
        mixed = self.learn("m", [(1, [(0, 1.0)]), (-1, [(0, 1.7e308)]), (1, [(1, 2.0)])])
        self.assertEqual([r.HasField("error") for r in mixed.results], [False, True, False])
        self.assertIn("not a finite double", mixed.results[1].error.message)
        st = self.status("m")
        self.assertEqual((st.examples, st.pending), (4, 0))
        weights = self.weights("m")
        self.assertEqual(len(weights), 3)
        self.assertTrue(all(math.isfinite(w) for w in weights))
        self.assertNotEqual(before, weights)
        exported = self.stub.ExportModel(pb.ExportModelRequest(model_id="m")).blob
        # Every acknowledged example is there after a clean restart.
        log = self.restart(*extra)
        self.assertIn("0 dropped", log)
        st = self.status("m")
        self.assertEqual((st.examples, st.pending), (4, 0))
        self.assertEqual(self.weights("m"), weights)
        # And the export imports.
        self.stub.ImportModel(pb.ImportModelRequest(blob=exported, model_id="m2"))
        self.assertEqual(self.weights("m2"), weights)

    def test_huge_features_are_refused_item_by_item_and_nothing_is_lost(self):
        self.check_huge_features()

    def test_the_same_with_a_snapshot_after_every_record(self):
        self.check_huge_features("--snapshot_every=1")

    def test_a_learning_rate_that_makes_overflow_certain_is_refused(self):
        self.start()
        with self.assertRaises(grpc.RpcError) as bad:
            self.stub.CreateModel(pb.CreateModelRequest(model_id="e", config=pb.ModelConfig(
                dimension=3, eta=1e308)))
        self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("eta 1e+308 is out of range", bad.exception.details())
        # The largest allowed eta, unnormalized: ordinary examples learn, all finite, and
        # every acknowledged one survives a restart.
        self.stub.CreateModel(pb.CreateModelRequest(model_id="e", config=pb.ModelConfig(
            dimension=3, eta=1e100, normalize=False)))
        stream = pp.Stream(d=3, seed=4)
        examples = [stream.next() for _ in range(7)]
        pp.learn(pb, self.stub, "e", examples, batch=1)
        weights = self.weights("e")
        self.assertTrue(all(math.isfinite(w) for w in weights))
        # An update that would overflow a weight (eta x = 1.9e308): refused, nothing changed.
        self.stub.CreateModel(pb.CreateModelRequest(model_id="big", config=pb.ModelConfig(
            dimension=1, eta=1e100, normalize=False, bias=False)))
        over = self.learn("big", [(1, [(0, 1.9e208)]), (1, [(0, 1e200)])])
        self.assertTrue(over.results[0].HasField("error"))
        self.assertIn("overflow a double", over.results[0].error.message)
        self.assertFalse(over.results[1].HasField("error"))
        self.assertEqual(self.weights("big"), [1e300])
        self.restart("--snapshot_every=1")
        self.assertEqual(self.status("e").examples, 7)
        self.assertEqual(self.weights("e"), weights)
        self.assertEqual(self.status("big").examples, 1)
        self.assertEqual(self.weights("big"), [1e300])

