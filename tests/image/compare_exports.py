"""Says what differs between two ExportModel blobs of one model (before and after a restart):
the blob's own fields, each field of the model's state, and each field of its certificate.
image_test.sh calls it when the blobs are not equal byte for byte, to say why.
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


def differing(a, b, prefix=""):
    """The names of the fields set differently in messages a and b."""
    out = []
    for field in a.DESCRIPTOR.fields:
        x, y = getattr(a, field.name), getattr(b, field.name)
        if x != y:
            out.append(prefix + field.name)
    return out


(before_blob, before), (after_blob, after) = read(sys.argv[2]), read(sys.argv[3])
names = [n for n in differing(before_blob, after_blob) if n not in ("state", "crc32")]
names += differing(before, after, "state.")
if "state.certificate" in names:
    names.remove("state.certificate")
    names += differing(before.certificate, after.certificate, "state.certificate.")
phase = state_pb2.CertificateState.DESCRIPTOR.fields_by_name["phase"].enum_type
print("%s: %s differ (certificate phase %s -> %s%s)" % (
    before_blob.model_id, ", ".join(names) or "no fields",
    phase.values_by_number[before.certificate.phase].name,
    phase.values_by_number[after.certificate.phase].name,
    ": %s" % after.certificate.reason if after.certificate.reason else ""))
