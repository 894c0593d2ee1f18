"""What the client's calls return and raise: the error type, the results of learning and of
issuing predictions, and the conversion of the server's answers into them."""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import grpc
import numpy as np

from perceptron.v1 import perceptron_pb2 as pb

from . import _wire

#: gRPC's status codes by number, as the server's per-item errors carry them.
_CODES = {code.value[0]: code for code in grpc.StatusCode}


class PerceptronError(Exception):
    """A call failed: `code` is the gRPC status code, `message` the server's message."""

    def __init__(self, code: grpc.StatusCode, message: str, item: Optional[int] = None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        #: For an example the server refused, its index in the call's input.
        self.item = item


def _raise(e: grpc.RpcError) -> PerceptronError:
    return PerceptronError(e.code(), e.details() or "")


@dataclasses.dataclass
class LearnResult:
    """What learning a batch of examples did, one entry per example in input order."""
    #: The score each example was judged on (0 where it was refused).
    scores: np.ndarray
    #: y * score <= 0.
    mistakes: np.ndarray
    #: The model's state changed.
    updates: np.ndarray
    #: (index, PerceptronError) of each example the server refused; the others were learned.
    errors: list
    #: The model's counters and bound after the last batch.
    stats: pb.ModelStats
    #: learn(retry_for=...): indexes of examples a broken stream had the model learn whose
    #: answers were lost with it (their scores NaN, mistakes and updates False).
    unanswered: list = dataclasses.field(default_factory=list)
    #: The label issued for each example: -1 or +1 (0 where refused or unanswered), or a
    #: multiclass model's class name (None there). For a multiclass model `scores` are the
    #: margins of those classes over the runner-up, and a mistake is an example whose class was
    #: not strictly above every other.
    predicted: Optional[np.ndarray] = None


def _bits(packed: bytes, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), bitorder="little")[:n] \
        .astype(bool) if n else np.zeros(0, dtype=bool)


def _item_outcomes(response: pb.LearnResponse, at: int, result: "LearnResult") -> None:
    """Copies the per-item answers of one request into `result` from position `at`."""
    for i, r in enumerate(response.results):
        if r.HasField("error"):
            result.errors.append(
                (at + i, PerceptronError(_CODES[r.error.code], r.error.message, at + i)))
        else:
            result.scores[at + i] = r.outcome.score
            result.mistakes[at + i] = r.outcome.mistake
            result.updates[at + i] = r.outcome.updated
            result.predicted[at + i] = r.outcome.label
    result.stats = response.stats


def _batches(kind: str, rows, labels: Optional[np.ndarray],
             batch_size: int) -> Iterator[_wire.Message]:
    """The rows (and labels, if any) as Columns messages of at most batch_size rows."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    n = rows.shape[0]
    for start in range(0, n, batch_size):
        end = min(n, start + batch_size)
        part = None if labels is None else labels[start:end]
        if kind == "dense":
            yield _wire.dense_columns(rows[start:end], part)
        else:
            lo, hi = rows.indptr[start], rows.indptr[end]
            yield _wire.sparse_columns(rows.indptr[start:end + 1], rows.indices[lo:hi],
                                       rows.data[lo:hi], part)


def _answers(c: pb.ColumnResults) -> tuple[np.ndarray, np.ndarray]:
    """A columnar answer's scores and labels as arrays, read from its bytes (a value at a time
    through the message only where the bytes are not in the form _wire.column_answers reads)."""
    scores, labels = _wire.column_answers(c.SerializeToString())
    if scores is None:
        scores = np.array(c.scores, dtype=np.float64)
    if labels is None:
        labels = np.array(c.labels, dtype=np.int64)
    return scores, labels


def _error(e, at: int) -> tuple:
    return at + e.item, PerceptronError(_CODES[e.error.code], e.error.message, at + e.item)


def _outcomes(responses: Iterator[pb.LearnResponse], n: int) -> LearnResult:
    """A LearnResult of n items from the columnar answers of their batches."""
    scores = np.zeros(n)
    mistakes = np.zeros(n, dtype=bool)
    updates = np.zeros(n, dtype=bool)
    labels = np.zeros(n, dtype=np.int64)
    errors = []
    stats = pb.ModelStats()
    at = 0
    for response in responses:
        c = response.columns
        k = len(c.scores)
        scores[at:at + k], labels[at:at + k] = _answers(c)
        mistakes[at:at + k] = _bits(c.mistakes, k)
        updates[at:at + k] = _bits(c.updates, k)
        errors.extend(_error(e, at) for e in c.errors)
        stats = response.stats
        at += k
    if at != n:
        # Every batch of a stream that ends OK is answered; one cut short on the way (a
        # proxy's) is a broken stream.
        raise PerceptronError(grpc.StatusCode.UNAVAILABLE,
                              f"the Learn stream ended without an error after {at} of {n} "
                              "examples were answered")
    return LearnResult(scores, mistakes, updates, errors, stats, predicted=labels)


@dataclasses.dataclass
class Issued:
    """Predictions issued, one entry per example in input order."""
    #: The prediction id to reveal later (0 where the example was refused).
    ids: np.ndarray
    scores: np.ndarray
    #: +1 where the score is >= 0, else -1 (0 where refused); a multiclass model's class
    #: names (None where refused), the scores then their margins over the runner-up.
    labels: np.ndarray
    #: (index, PerceptronError) of each example the server refused.
    errors: list
