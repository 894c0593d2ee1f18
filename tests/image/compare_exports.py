"""Two ExportModel blobs of one model, before and after a restart: the model (configuration,
counters, learner state, pending predictions, the recent-mistake window and learning curve) must
be equal bit for bit, and so must the certificate's comparators and their hinge sums (so its
bound U is the same). The certificate's kept examples are not stored (core/certificate_tracker.h,
Restore), so its phase may go from exact to frozen; what it says is printed.
Usage: compare_exports.py STUBS_DIR BEFORE AFTER"""
import sys

sys.path.insert(0, sys.argv[1])
from perceptron.v1 import state_pb2  # noqa: E402


def read(path):
    blob = state_pb2.ExportedModel()
    with open(path, "rb") as f:
        blob.ParseFromString(f.read())
    state = state_pb2.ModelState()
    state.ParseFromString(blob.state)
    return blob, state


(before_blob, before), (after_blob, after) = read(sys.argv[2]), read(sys.argv[3])
assert before_blob.model_id == after_blob.model_id
assert before_blob.created_at == after_blob.created_at
cert_before, cert_after = state_pb2.CertificateState(), state_pb2.CertificateState()
cert_before.CopyFrom(before.certificate)
cert_after.CopyFrom(after.certificate)
before.ClearField("certificate")
after.ClearField("certificate")
same = before.SerializeToString(deterministic=True) == after.SerializeToString(deterministic=True)
assert same, "the model's state differs after the restart"
assert list(cert_before.candidates) == list(cert_after.candidates), "comparators differ"
assert list(cert_before.sums) == list(cert_after.sums), "their hinge sums differ"
assert cert_before.observed == cert_after.observed
phase = cert_before.DESCRIPTOR.fields_by_name["phase"].enum_type.values_by_number
print("%s: model state equal bit for bit (%d bytes); certificate comparators and sums equal,"
      " phase %s -> %s%s" % (before_blob.model_id, before.ByteSize(),
                             phase[cert_before.phase].name, phase[cert_after.phase].name,
                             " (%s)" % cert_after.reason if cert_after.reason else ""))
