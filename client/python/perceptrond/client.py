"""The Python client of perceptrond."""
from __future__ import annotations

import copy
import dataclasses
import logging
import queue
import re
import time
from typing import Iterator, Mapping, Optional, Sequence

import grpc
import numpy as np

from perceptron.v1 import perceptron_pb2 as pb
from perceptron.v1 import perceptron_pb2_grpc as pb_grpc

from . import _wire
from ._inputs import (_BATCH_BYTES, _batch_rows, _class_key, _class_labels, _frame_batches,
                      _frame_rows, _is_frame, _is_named, _labels, _named, _named_columns,
                      _numeric_frame, _rows)
from ._results import (_CODES, Issued, LearnResult, PerceptronError, _answers, _batches, _bits,
                       _error, _item_outcomes, _outcomes, _raise)

#: Where Model.learn(retry_for=...) says, at INFO, each time a stream broke and where it resumes
#: (the CLI's `train --retry_for` prints the same on standard error).
_log = logging.getLogger("perceptrond")

#: Every call that names a model carries its id in this request header, so that a proxy in
#: front of several servers can route by it (docs/design.md section 10).
MODEL_HEADER = "x-perceptron-model"


def _header_value(text: str) -> bool:
    """Whether `text` can be a gRPC header's value: printable ASCII."""
    return all(" " <= c <= "~" for c in text)


_ALGORITHMS = {"classic": pb.CLASSIC, "margin": pb.MARGIN, "averaged": pb.AVERAGED,
               "voted": pb.VOTED, "kernel": pb.KERNEL}
_KERNELS = {"linear": pb.LINEAR, "polynomial": pb.POLYNOMIAL, "rbf": pb.RBF}
#: Codes after which Model.learn(retry_for=...) resumes a stream: the server or the path to it
#: went away (a proxy resetting the stream shows as INTERNAL or UNKNOWN), or the model's count
#: moved before the resumed stream's first batch (FAILED_PRECONDITION from if_examples).
_RESUMABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
              grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED,
              grpc.StatusCode.FAILED_PRECONDITION}
# A GetServerStatus that fails so will fail again: Client._max_items stops asking.
_LASTING_REFUSALS = {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
                     grpc.StatusCode.UNIMPLEMENTED}


@dataclasses.dataclass(frozen=True)
class TLS:
    """PEM bytes: the CA that signed the server's certificate and, for mutual TLS, this
    client's certificate chain and private key."""
    root_certificates: bytes
    certificate_chain: Optional[bytes] = None
    private_key: Optional[bytes] = None

    def check(self) -> None:
        """ValueError for PEM bytes in the wrong field (a key as the CA, say), or a chain
        without its key: gRPC would only log its own errors and fail to connect."""
        for what, pem, marker in (("root_certificates", self.root_certificates,
                                   b"-----BEGIN CERTIFICATE-----"),
                                  ("certificate_chain", self.certificate_chain,
                                   b"-----BEGIN CERTIFICATE-----"),
                                  ("private_key", self.private_key, b"PRIVATE KEY-----")):
            if pem is not None and marker not in bytes(pem):
                raise ValueError(f"TLS {what} holds no PEM {marker.decode()}")
        if (self.certificate_chain is None) != (self.private_key is None):
            raise ValueError("TLS certificate_chain and private_key go together")


class Stream:
    """A Learn stream kept open: each call sends one batch and returns its answer. Use it as a
    context manager, or call close()."""

    def __init__(self, model: Model):
        self._model = model
        self._requests: "queue.Queue[Optional[bytes]]" = queue.Queue()
        self._responses = model.client._learn(model.id, iter(self._requests.get, None))
        self._named = False

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, columns) -> pb.LearnResponse:
        self._requests.put(_wire.learn_request("" if self._named else self._model.id, columns))
        self._named = True
        return next(self._responses)

    def _send_items(self, request: pb.LearnRequest) -> pb.LearnResponse:
        if not self._named:
            request.model_id = self._model.id
        self._requests.put(request.SerializeToString())
        self._named = True
        return next(self._responses)

    def _learn_named(self, rows: Sequence[Mapping], labels: np.ndarray,
                     batch_size: int) -> LearnResult:
        n = len(rows)
        result = LearnResult(np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool),
                             [], pb.ModelStats(), predicted=np.zeros(n, dtype=np.int64))
        for start in range(0, n, batch_size):
            request = pb.LearnRequest()
            for i in range(start, min(n, start + batch_size)):
                item = request.items.add().labeled
                _named(rows[i], item.features.named)
                item.label = int(labels[i])
            _item_outcomes(self._send_items(request), start, result)
        return result

    def issue(self, x, batch_size: Optional[int] = None) -> Issued:
        """Predicts each row of `x` (an array, a sparse matrix, or a list of dicts by name) and
        keeps it pending under a new prediction id, in batches of `batch_size` rows (by
        default about 2 MiB of an array's values, at most 8,192 rows; 1,024 dicts, fewer where
        they are wide: Model.learn's batches). A pandas DataFrame as Model.learn reads it."""
        if self._model._frame_by_name(x):
            n = len(x)
            batches = _frame_batches(x, None, self._model._frame_batch_rows(x, batch_size))
        elif isinstance(x := self._model._frame(x), (list, tuple)) and x and isinstance(
                x[0], Mapping):
            n = len(x)
            batch_size = self._model._rows_a_batch(batch_size, None, x)
            batches = (_named_columns(x[s:s + batch_size], None)
                       for s in range(0, n, batch_size))
        else:
            kind, rows = _rows(x)
            n = rows.shape[0]
            batches = _batches(kind, rows, None, self._model._rows_a_batch(batch_size, kind, rows))
        ids = np.zeros(n, dtype=np.uint64)
        scores = np.zeros(n)
        labels = np.zeros(n, dtype=np.int64)
        errors = []
        at = 0
        for columns in batches:
            c = self._send(columns).columns
            k = len(c.scores)
            refused = np.zeros(k, dtype=bool)
            for e in c.errors:
                refused[e.item] = True
                errors.append(_error(e, at))
            ok = np.flatnonzero(~refused)
            ids[at + ok] = c.first_prediction_id + np.arange(len(ok), dtype=np.uint64)
            scores[at:at + k], labels[at:at + k] = _answers(c)
            at += k
        if self._model.classes:  # class names, None where refused
            labels = np.array(self._model.classes, dtype=object)[labels]
            for i, _ in errors:
                labels[i] = None
        return Issued(ids, scores, labels, errors)

    def reveal(self, ids, y) -> LearnResult:
        """The labels of issued predictions: each is judged on the score issued then and
        learned on the current weights (`predicted`: the label issued, a class name for a
        multiclass model)."""
        ids = np.asarray(ids, dtype=np.uint64)
        labels = self._model._labels(y, ids.shape[0])
        step = self._model._rows_a_batch(None)
        return self._model._named_classes(_outcomes(
            (self._send(_wire.reveal_columns(ids[s:s + step], labels[s:s + step]))
             for s in range(0, len(ids), step)), len(ids)))

    def learn(self, x, y, batch_size: Optional[int] = None) -> LearnResult:
        """Predict then learn, as Model.learn, on this stream (one batch of `batch_size` rows,
        by default as Model.learn's, answered before the next is sent). `x` may also be one
        example as {index: value}, or by name ({name: value}, {(namespace, name): value}; a
        string value is categorical) for a model created with hash_bits, or a list of such
        dicts."""
        return self._model._named_classes(self._learn(x, y, batch_size))

    def _learn(self, x, y, batch_size: Optional[int]) -> LearnResult:
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self._model._frame_by_name(x):
            labels = self._model._labels(y, len(x))
            batches = _frame_batches(x, labels, self._model._frame_batch_rows(x, batch_size))
            return _outcomes((self._send(c) for c in batches), len(x))
        x = self._model._frame(x)
        if _is_named(x):
            return self._learn_named([x], self._model._labels([y], 1), 1)
        if isinstance(x, (list, tuple)) and x and isinstance(x[0], Mapping):
            return self._learn_named(x, self._model._labels(y, len(x)),
                                     self._model._rows_a_batch(batch_size, None, x))
        if isinstance(x, Mapping):
            indices = np.fromiter(x.keys(), dtype=np.int64, count=len(x))
            values = np.fromiter(x.values(), dtype=np.float64, count=len(x))
            if np.any(indices < 0):
                raise ValueError("feature indices must be >= 0")
            columns = _wire.sparse_columns(np.array([0, len(x)]), indices, values,
                                           self._model._labels([y], 1))
            return _outcomes(iter([self._send(columns)]), 1)
        kind, rows = _rows(x)
        labels = self._model._labels(y, rows.shape[0])
        self._model._check_width(kind, rows)
        batch_size = self._model._rows_a_batch(batch_size, kind, rows)
        return _outcomes((self._send(c) for c in _batches(kind, rows, labels, batch_size)),
                         rows.shape[0])

    def close(self) -> None:
        """Ends the stream once every answer has arrived."""
        self._requests.put(None)
        for _ in self._responses:
            pass


class Model:
    """A model on the server, by id. Holds no state of its own: every method is a call."""

    def __init__(self, client: "Client", model_id: str):
        self.client = client
        self.id = model_id
        self._one: Optional[Stream] = None
        self._config: Optional[pb.ModelConfig] = None

    @property
    def classes(self) -> list:
        """A multiclass model's class names in index order (fixed at creation); empty for a
        binary model."""
        return self._classes_of(0)

    def _config_of(self, retry_for: float) -> pb.ModelConfig:
        """The model's configuration (fixed at creation), fetched once."""
        if self._config is None:
            self._config = self._retrying(self.info, retry_for).config
        return self._config

    def _classes_of(self, retry_for: float) -> list:
        return list(self._config_of(retry_for).classes)

    def _check_width(self, kind: str, rows, retry_for: float = 0) -> None:
        """A dense array's rows must have the model's dimension: said here, in the caller's
        terms, rather than by the server in the wire's. No rows fit any model."""
        if kind != "dense" or rows.shape[0] == 0:
            return
        config = self._config_of(retry_for)
        dimension = config.dimension
        if rows.shape[1] != dimension:
            by_name = ""
            if config.hash_bits or config.feature_names:
                by_name = (" (it takes features by name: dicts such as {'age': 34, 'city': "
                           "'paris'})")
            raise ValueError(f"the examples have {rows.shape[1]} features; model "
                             f"{self.id!r} has dimension {dimension}{by_name}")

    def _by_name(self, retry_for: float = 0) -> bool:
        """Whether the model takes features by name (created with hash_bits or feature_names)."""
        config = self._config_of(retry_for)
        return bool(config.hash_bits or config.feature_names)

    def _frame(self, x, retry_for: float = 0):
        """A pandas DataFrame as this model takes it: for a model by name, its rows as dicts by
        name (_frame_rows: as the command-line client reads a CSV file by its header); for a
        model of vectors, its values, every column numbers. Anything else as it is."""
        if not _is_frame(x):
            return x
        if self._by_name(retry_for):
            return _frame_rows(x)
        if not _numeric_frame(x):
            column = next(c for c, t in zip(x.columns, x.dtypes)
                          if getattr(t, "kind", "O") not in "biuf")
            try:
                return np.asarray(x, dtype=np.float64)  # an object column of numbers
            except (TypeError, ValueError):
                raise ValueError(
                    f"column {column!r} of the DataFrame is not numbers: model {self.id!r} "
                    f"takes vectors of dimension {self._config_of(retry_for).dimension} (a "
                    "model created with hash_bits reads a DataFrame by its columns' names, a "
                    "string as a categorical feature)") from None
        return x

    def _rows_a_batch(self, batch_size: Optional[int], kind: Optional[str] = None,
                      rows=None) -> int:
        """`batch_size` if given, else the default for these rows (_batch_rows, within the
        client's message limit), at most the items the server takes in a request (its
        --max_batch_items, asked once a client)."""
        if batch_size is not None:
            return batch_size
        default = _batch_rows(None, kind, rows, self.client._batch_bytes)
        limit = self.client._max_items(self.id)
        return min(default, limit) if limit > 0 else default

    def _frame_by_name(self, x, retry_for: float = 0) -> bool:
        """Whether `x` is a DataFrame of rows this model takes by name: sent as columns by name
        (_frame_batches), encoded column by column."""
        return _is_frame(x) and len(x) > 0 and self._by_name(retry_for)

    def _frame_batch_rows(self, frame, batch_size: Optional[int]) -> int:
        """The rows of a batch of a DataFrame by name: `batch_size`, else the default."""
        rows = self._rows_a_batch(batch_size, "frame", frame)
        if rows < 1:
            raise ValueError("batch_size must be at least 1")
        return rows

    def _series(self, x):
        """One pandas Series (a DataFrame's row, as iterrows gives it) as learn_one takes an
        example: a dict by name for a model by name (a missing value no feature), else its
        values. Anything else as it is."""
        if _is_frame(x) or not (hasattr(x, "index") and hasattr(x, "notna")):
            return x
        if not self._by_name():
            return np.asarray(x, dtype=np.float64)
        return {k if isinstance(k, tuple) else str(k): v
                for k, v, here in zip(x.index, x.tolist(), x.notna().to_numpy()) if here}

    @staticmethod
    def _retrying(call, retry_for: float):
        """call(); with retry_for (seconds), retried with growing pauses while it fails with a
        code a resumed stream retries (a server restarting, a model being moved)."""
        deadline = time.monotonic() + retry_for
        pause = 0.1
        while True:
            try:
                return call()
            except PerceptronError as e:
                if e.code not in _RESUMABLE or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)  # a retry's pause
                pause = min(2 * pause, 2.0)

    def _labels(self, y, n: int, retry_for: float = 0) -> np.ndarray:
        """Labels for the wire: -1/+1 for a binary model; a multiclass model's class names
        (strings, or numbers naming them) as class indices."""
        classes = self._classes_of(retry_for)
        if not classes:
            return _labels(y, n)
        return _class_labels(y, n, classes)

    def _named_classes(self, result: LearnResult) -> LearnResult:
        """result.predicted as class names for a multiclass model (None where refused or
        unanswered)."""
        if self.classes and result.predicted is not None:
            names = np.array(self.classes, dtype=object)[result.predicted]
            for i, _ in result.errors:
                names[i] = None
            names[result.unanswered] = None
            result.predicted = names
        return result

    def __repr__(self) -> str:
        return f"Model({self.id!r})"

    def info(self) -> pb.Model:
        """The model's id, configuration and creation time."""
        return self.client._call("GetModel", pb.GetModelRequest(model_id=self.id))

    def status(self) -> pb.ModelStatus:
        """Counters, TD_gamma, R, the bound, the certificate and the mistake rates."""
        return self.client._call("GetStatus", pb.GetStatusRequest(model_id=self.id))

    def history(self) -> pb.History:
        """The learning curve: examples, mistakes, updates and the bound at points."""
        return self.client._call("GetHistory", pb.GetHistoryRequest(model_id=self.id))

    def certificate(self) -> pb.CertificateResponse:
        """The certificate (DESIGN 2.7) with the comparator u attaining its bound."""
        return self.client._call("GetCertificate",
                                 pb.GetCertificateRequest(model_id=self.id))

    def weights(self) -> np.ndarray:
        """The weight vector (with the bias coordinate last, if the model has one); empty for
        a kernel model, whose w lies in the kernel's feature space (certificate() gives its
        comparator as a sum over kept examples)."""
        chunks = self.client._stream("GetWeightsChunks",
                                     pb.GetWeightsRequest(model_id=self.id))
        return np.array([v for c in chunks for v in c.values], dtype=np.float64)

    def top_features(self, n: int = 20) -> list:
        """The n heaviest non-zero coordinates by |weight| (ties: the lower index first), as
        (index, weight, name), heaviest first. The name is a listed model's name for the
        coordinate, the names a hashing model kept on the slot (joined by " | " when several
        collided there), "(bias)" for the bias coordinate, or None when no name was kept.
        Computed by the server (GetWeightsRequest.top), whatever the model's dimension."""
        chunks = self.client._stream("GetWeightsChunks",
                                     pb.GetWeightsRequest(model_id=self.id, top=n))
        out = []
        for chunk in chunks:
            for f in chunk.top:
                name = "(bias)" if f.bias else (" | ".join(f.names) if f.names else None)
                out.append((f.index, f.weight, name))
        return out

    def reset(self) -> None:
        """Back to a new model of the same configuration."""
        self.client._call("ResetModel", pb.ResetModelRequest(model_id=self.id))

    def delete(self) -> None:
        self.client._call("DeleteModel", pb.DeleteModelRequest(model_id=self.id))

    def watch(self, min_interval: float = 0.2) -> Iterator[pb.ModelStatus]:
        """Yields the model's status each time it changes, at most once per `min_interval`
        seconds, until the caller stops iterating."""
        request = pb.WatchStatusRequest(model_id=self.id,
                                        min_interval_ms=int(min_interval * 1000))
        call = self.client._stub.WatchStatus(request,
                                             metadata=self.client._with_model(self.id))
        try:
            yield from call
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                raise _raise(e) from None
        finally:
            call.cancel()

    def learn(self, x, y, batch_size: Optional[int] = None, retry_for: float = 0) -> LearnResult:
        """Predict then learn each labeled example in order (the prequential protocol):
        `x` a 2-D numpy array or a scipy.sparse matrix, `y` its labels (+1/1/True or
        -1/0/False, as numbers, booleans or strings; a multiclass model's class names).
        Streamed as columnar batches of `batch_size` rows on one Learn stream, several in
        flight; by default as many rows as make about 2 MiB of values (at most 8,192, under the
        server's default --max_batch_items: a message's own cost is then small beside its
        rows'), and 1,024 dicts by name (fewer where the widest dict's features, 16 bytes each
        and the text of their names, pass 2 MiB); half the client's max_message_bytes where that is
        less than 2 MiB; never more than the server's --max_batch_items.
        Examples the server refuses (a NaN, an index out of range) are listed in the result's
        errors and change nothing; the others are learned.

        With `retry_for` (seconds), a stream that breaks (the server restarting, a shard
        behind a proxy gone) is resumed: once the model answers again, within `retry_for`, the
        examples it holds say where to go on. Each request carries the count the model must
        hold before it (LearnRequest.if_examples), so no example is lost or learned twice, even
        should a request go missing on the way; the waiting and the new stream go on a
        connection of their own (a proxy reloaded meanwhile may keep the old one on its old
        routes), closed when learn returns. It assumes
        no other client writes to the model meanwhile; the rows must then be ones the server
        accepts (checked here first: ValueError otherwise). An example a broken stream had the
        model learn and commit without an answer is listed in the result's `unanswered` (its
        score NaN); if the model holds fewer examples than were answered (a server without
        durability restarted), learn raises DATA_LOSS instead of resuming. A model that
        refuses every batch for a while (UNAVAILABLE while `perceptron rebalance` moves it to
        another shard) is retried with growing pauses until `retry_for` passes with no progress.
        Each resumption is logged at INFO on the logger "perceptrond" (where the stream broke,
        why, and where it resumes).

        For a model created with hash_bits or feature_names, `x` may be a list of dicts by name
        ({name: value}, {(namespace, name): value}; a string value is categorical), sent as
        columnar batches of names (a table of each batch's strings and packed references; retry_for
        does not apply). A pandas DataFrame is read by its columns' names for such a model (a
        string or a category is categorical, a missing cell no feature, as the command-line
        client reads a CSV file by its header), sent as columnar batches by name encoded column
        by column (no dict a row); for the other models, as a matrix of numbers."""
        if self._frame_by_name(x, retry_for):
            if retry_for:
                raise ValueError("retry_for applies to arrays, not to DataFrames by name")
            labels = self._labels(y, len(x))
            batches = _frame_batches(x, labels, self._frame_batch_rows(x, batch_size))
            return self._named_classes(_outcomes(self.client._learn(self.id, (
                _wire.learn_request(self.id if i == 0 else "", c)
                for i, c in enumerate(batches))), len(x)))
        x = self._frame(x, retry_for)
        if isinstance(x, (list, tuple)) and x and isinstance(x[0], Mapping):
            if retry_for:
                raise ValueError("retry_for applies to arrays, not to dicts by name")
            labels = self._labels(y, len(x))
            batch_size = self._rows_a_batch(batch_size, None, x)
            if batch_size < 1:
                raise ValueError("batch_size must be at least 1")
            batches = [_wire.learn_request(self.id if s == 0 else "",
                                           _named_columns(x[s:s + batch_size],
                                                          labels[s:s + batch_size]))
                       for s in range(0, len(x), batch_size)]
            return self._named_classes(
                _outcomes(self.client._learn(self.id, iter(batches)), len(x)))
        kind, rows = _rows(x)
        n = rows.shape[0]
        labels = self._labels(y, n, retry_for)
        self._check_width(kind, rows, retry_for)
        # Encoded as the stream takes them (a few batches in memory, not a copy of x), once
        # what the encoding could refuse is checked: nothing is sent if it would be.
        batch_size = self._rows_a_batch(batch_size, kind, rows)
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if retry_for > 0:
            return self._learn_resuming(kind, rows, labels, batch_size, retry_for)
        if kind == "sparse":
            _wire.check_indices(rows.indices)
        batches = (_wire.learn_request(self.id if i == 0 else "", columns)
                   for i, columns in enumerate(_batches(kind, rows, labels, batch_size)))
        if n == 0:  # still one request, so that an unknown model is an error
            batches = iter([_wire.learn_request(self.id, b"")])
        return self._named_classes(_outcomes(self.client._learn(self.id, batches), n))

    def _learn_resuming(self, kind, rows, labels, batch_size, retry_for) -> LearnResult:
        n = rows.shape[0]
        dimension = self._retrying(self.info, retry_for).config.dimension
        if kind == "dense":
            if n and (rows.shape[1] != dimension or not np.all(np.isfinite(rows))):
                raise ValueError(f"retry_for: rows must have {dimension} finite values")
        elif (not np.all(np.isfinite(rows.data)) or rows.shape[1] > dimension or
              rows.has_canonical_format is False):
            raise ValueError(f"retry_for: rows must be finite, of dimension {dimension} at "
                             "most, without repeated indices")
        base = self._retrying(self.status, retry_for).stats.examples
        scores, mistakes, updates = np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        predicted = np.zeros(n, dtype=np.int64)
        stats = pb.ModelStats()
        unanswered = []
        done = 0  # examples of x the model held when the current stream opened
        # While resumed streams make no progress (a model being moved to another shard refuses
        # every batch with UNAVAILABLE until its move ends): since when, and the next pause.
        stalled_since, stall_pause = None, 0.1
        via = self  # after a break, the model through a connection of its own
        try:
            while True:
                part = rows[done:]
                # Each request names the model and carries the count the model holds before it
                # (if_examples): a request lost on the way (or sent twice) ends the stream with
                # nothing of it applied, and the stream is resumed, rather than the rest being
                # learned out of place.
                # Encoded as the stream takes them (the rows were checked above).
                batches = (_wire.learn_request(self.id, columns, base + done + i * batch_size)
                           for i, columns in enumerate(
                               _batches(kind, part, labels[done:], batch_size)))
                if done == n:
                    batches = iter([_wire.learn_request(self.id, b"", base + done)])
                at = done
                try:
                    for response in via.client._learn(self.id, batches):
                        c = response.columns
                        k = len(c.scores)
                        if len(c.errors):
                            raise PerceptronError(_CODES[c.errors[0].error.code],
                                                  c.errors[0].error.message, at + c.errors[0].item)
                        scores[at:at + k], predicted[at:at + k] = _answers(c)
                        mistakes[at:at + k] = _bits(c.mistakes, k)
                        updates[at:at + k] = _bits(c.updates, k)
                        stats = response.stats
                        at += k
                    if at == n:
                        return self._named_classes(LearnResult(
                            scores, mistakes, updates, [], stats, unanswered, predicted))
                    # Ended OK with batches unanswered (cut short on the way): a broken stream.
                    raise PerceptronError(grpc.StatusCode.UNAVAILABLE,
                                          f"the Learn stream ended without an error after {at} "
                                          f"of {n} examples were answered")
                except PerceptronError as e:
                    if e.code not in _RESUMABLE or e.item is not None:
                        raise
                    broke = e
                # What follows goes on a new connection: a proxy reloaded with the model's new shard
                # may have left the old one with a worker that routes by the old shard set.
                if via is not self:
                    via.client.close()
                via = Model(self.client._another(), self.id)
                # Once the model answers again, what it holds says where to go on.
                deadline = time.monotonic() + retry_for
                pause = 0.1
                while True:
                    try:
                        held = via.status().stats.examples - base
                        break
                    except PerceptronError as e:
                        if e.code not in _RESUMABLE or time.monotonic() + pause > deadline:
                            raise PerceptronError(e.code, f"{self.id} did not answer again within "
                                                  f"{retry_for} s after {broke.message}: "
                                                  f"{e.message}") from None
                        time.sleep(pause)  # a retry's pause
                        pause = min(2 * pause, 2.0)
                if held < at or held > n:
                    raise PerceptronError(
                        grpc.StatusCode.DATA_LOSS,
                        f"{self.id} holds {held} of these {n} examples after the stream broke, "
                        f"{at} were acknowledged: examples were lost (a server without "
                        "durability?) or another client writes to it; not resuming")
                _log.info("%s: the Learn stream broke after %d of %d examples were answered "
                          "(%s: %s); the model holds %d of them: resuming at example %d", self.id,
                          at, n, broke.code.name, broke.message, held, held)
                # Learned by the broken stream, committed, but never answered.
                unanswered.extend(range(at, held))
                scores[at:held] = np.nan
                if held == done:
                    now = time.monotonic()
                    stalled_since = now if stalled_since is None else stalled_since
                    if now - stalled_since + stall_pause > retry_for:
                        raise PerceptronError(broke.code, f"{self.id}: no progress for "
                                              f"{retry_for} s: {broke.message}")
                    time.sleep(stall_pause)  # a retry's pause
                    stall_pause = min(2 * stall_pause, 2.0)
                else:
                    stalled_since, stall_pause = None, 0.1
                done = held
        finally:
            if via is not self:
                via.client.close()

    def stream(self) -> "Stream":
        """A Learn stream for predict-then-reveal, as a context manager:

            with model.stream() as s:
                issued = s.issue(X)                  # prediction ids, scores, labels
                outcome = s.reveal(issued.ids, y)    # judged on the scores issued
        """
        return Stream(self)

    def learn_one(self, x, y: int) -> bool:
        """One labeled example (River's learn_one) on a stream the model keeps open until
        close(): features {index: value}, a 1-D array of the model's dimension, or by name
        ({name: value}, {(namespace, name): value}, a string value categorical) for a model
        created with hash_bits; a pandas Series (a DataFrame's row) is read by its index's
        names for such a model, as its values for the others. Returns whether it was a
        mistake."""
        if self._one is None:
            self._one = Stream(self)
        x = self._series(x)
        if _is_named(x):
            result = self._one.learn(x, y)
        elif isinstance(x, Mapping):
            result = self._one.learn({int(k): float(v) for k, v in x.items()}, y)
        else:
            row = np.asarray(x, dtype=np.float64)
            if row.ndim != 1:
                raise ValueError(f"one example is 1-D, not of shape {row.shape}")
            result = self._one.learn(row.reshape(1, -1), [y])
        if result.errors:
            raise result.errors[0][1]
        return bool(result.mistakes[0])

    def predict_one(self, x):
        """The label (+1 or -1) of one example (River's predict_one), given as learn_one
        takes it; a multiclass model's class name."""
        request = pb.PredictRequest(model_id=self.id)
        x = self._series(x)
        if _is_named(x):
            _named(x, request.examples.add().named)
        elif isinstance(x, Mapping):
            f = request.examples.add().sparse
            f.indices.extend(int(k) for k in x)
            f.values.extend(float(v) for v in x.values())
        else:
            request.examples.add().dense.values.extend(
                np.asarray(x, dtype=np.float64).ravel().tolist())
        label = int(self.client._call("Predict", request).predictions[0].label)
        return self.classes[label] if self.classes else label

    def close(self) -> None:
        """Closes the stream learn_one keeps open, if any."""
        if self._one is not None:
            self._one.close()
            self._one = None

    def _predict(self, x, all_scores: bool = False, batch_size: Optional[int] = None) -> tuple:
        """The scores and labels of each row of `x` (an array, a sparse matrix, dicts by name
        in a list, a DataFrame as learn reads it) and, with `all_scores`, a multiclass model's
        k scores a row: Predict calls of columns of `batch_size` rows each (by default as many
        as learn sends a batch), so that no request passes the server's --max_batch_items or
        the message limit."""
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self._frame_by_name(x):
            n = len(x)
            batches = _frame_batches(x, None, self._frame_batch_rows(x, batch_size))
        elif isinstance(x := self._frame(x), (list, tuple)) and x and isinstance(
                x[0], Mapping):
            n = len(x)
            step = self._rows_a_batch(batch_size, None, x)
            batches = (_named_columns(x[s:s + step], None) for s in range(0, n, step))
        else:
            kind, rows = _rows(x)
            self._check_width(kind, rows)
            n = rows.shape[0]
            batches = _batches(kind, rows, None, self._rows_a_batch(batch_size, kind, rows))
        k = len(self.classes) if all_scores and self.classes else 0
        scores = np.zeros(n)
        labels = np.zeros(n, dtype=np.int64)
        class_scores = np.zeros((n, k))
        at = 0
        for columns in batches:
            try:
                c = self.client._predict_columns(self.id, columns, k > 0)
            except PerceptronError as e:
                # The server names a row by its place in the request: here, in `x`.
                item = re.match(r"item (\d+): ", e.message)
                if item is None:
                    raise
                row = at + int(item.group(1))
                raise PerceptronError(e.code, f"item {row}: {e.message[item.end():]}",
                                      row) from None
            part_scores, part_labels = _answers(c)
            m = len(part_scores)
            scores[at:at + m], labels[at:at + m] = part_scores, part_labels
            if k:
                class_scores[at:at + m] = np.array(c.class_scores, dtype=np.float64).reshape(m, k)
            at += m
        if at != n:
            raise PerceptronError(grpc.StatusCode.INTERNAL,
                                  f"the server answered {at} predictions for {n} rows")
        return scores, labels, class_scores

    def decision_function(self, x, batch_size: Optional[int] = None) -> np.ndarray:
        """The model's score of each row of `x` (or of each dict by name in a list, for a model
        with hash_bits); nothing is learned or issued. A multiclass model's: a row of k scores
        per example, in class order (those it decides on: averaged, or the votes for voted).
        Sent as columns in requests of `batch_size` rows, by default as learn sends them."""
        if self.classes:
            return self._predict(x, all_scores=True, batch_size=batch_size)[2]
        return self._predict(x, batch_size=batch_size)[0]

    def predict(self, x, batch_size: Optional[int] = None) -> np.ndarray:
        """+1 where the score is >= 0, else -1; a multiclass model's class names (the highest
        score, the lowest index among ties). Sent as decision_function sends them."""
        scores, labels, _ = self._predict(x, batch_size=batch_size)
        if self.classes:
            return np.array(self.classes, dtype=object)[labels]
        return np.where(scores >= 0, 1, -1)


def _set_comparator(config: pb.ModelConfig, comparator) -> None:
    """create_model's comparator into config: numbers as given, or a mapping of non-zeros
    {coordinate: value} as their coordinates and values (the server spreads them over the
    model's weight coordinates and says which is past them)."""
    if not isinstance(comparator, Mapping):
        config.comparator.extend(comparator)
        return
    for index, value in comparator.items():
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"comparator coordinate {index!r} is not an integer")
        if not 0 <= index < 1 << 32:
            raise ValueError(f"comparator coordinate {index} is not one of a model's (0 to "
                             f"2^32 - 1)")
        config.comparator_indices.append(int(index))
        config.comparator.append(value)


class Client:
    """A connection to perceptrond.

        client = Client("127.0.0.1:50051")
        model = client.create_model("spam", dimension=30)
        result = model.learn(X, y)
    """

    def __init__(self, address: str = "127.0.0.1:50051", token: Optional[str] = None,
                 tls: Optional[TLS] = None, timeout: float = 60.0,
                 max_message_bytes: int = 64 << 20):
        if token and not _header_value(token):
            # gRPC would refuse every call it went with.
            raise ValueError("the token holds a character that is not printable ASCII; a "
                             "bearer token is sent as a header, which takes only those")
        options = [("grpc.max_send_message_length", max_message_bytes),
                   ("grpc.max_receive_message_length", max_message_bytes)]
        self._address, self._options, self._credentials = address, options, None
        if tls is not None:
            tls.check()
            self._credentials = grpc.ssl_channel_credentials(
                root_certificates=tls.root_certificates, private_key=tls.private_key,
                certificate_chain=tls.certificate_chain)
        self._metadata = [("authorization", "Bearer " + token)] if token else None
        self._timeout = timeout
        # The bytes of a default batch: half the message limit where that is the less.
        self._batch_bytes = max(1, min(_BATCH_BYTES, max_message_bytes // 2))
        self._max_message_bytes = max_message_bytes
        self._item_limit: Optional[int] = None
        self._connect(self._options)

    def _connect(self, options: list) -> None:
        if self._credentials is not None:
            self._channel = grpc.secure_channel(self._address, self._credentials, options)
        else:
            self._channel = grpc.insecure_channel(self._address, options)
        self._stub = pb_grpc.PerceptronServiceStub(self._channel)
        self._learn_raw = self._channel.stream_stream(
            "/perceptron.v1.PerceptronService/Learn", request_serializer=None,
            response_deserializer=pb.LearnResponse.FromString)
        self._predict_raw = self._channel.unary_unary(
            "/perceptron.v1.PerceptronService/Predict", request_serializer=None,
            response_deserializer=pb.PredictResponse.FromString)

    def _another(self) -> "Client":
        """A client like this one on a connection of its own, not shared with this process's
        other channels to the address."""
        other = copy.copy(self)
        other._connect(self._options + [("grpc.use_local_subchannel_pool", 1)])
        return other

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _with_model(self, model_id: str) -> Optional[list]:
        """The call's metadata: the token, and the model's routing header if it names one.
        An id a header cannot carry goes without it: the server refuses such an id itself,
        naming the character."""
        if not model_id or not _header_value(model_id):
            return self._metadata
        return (self._metadata or []) + [(MODEL_HEADER, model_id)]

    def _call(self, method: str, request):
        try:
            return getattr(self._stub, method)(
                request, timeout=self._timeout,
                metadata=self._with_model(getattr(request, "model_id", "")))
        except grpc.RpcError as e:
            raise _raise(e) from None

    def _max_items(self, model_id: str) -> int:
        """The most items the server takes in a request (its --max_batch_items), asked
        (GetServerStatus, routed by `model_id`) until it answers; 0 where it does not say or the
        call fails (the calls after it say why). A refusal that will not change (a token that
        may not read the server's status, a server without the call) is kept; any other failure
        (the server unreachable for a while) asks again next time."""
        if self._item_limit is None:
            try:
                status = self._stub.GetServerStatus(pb.GetServerStatusRequest(),
                                                    timeout=self._timeout,
                                                    metadata=self._with_model(model_id))
                self._item_limit = int(status.max_batch_items)
            except grpc.RpcError as e:
                if e.code() in _LASTING_REFUSALS:
                    self._item_limit = 0
                return 0
        return self._item_limit

    def _predict_columns(self, model_id: str, columns, all_scores: bool) -> pb.PredictColumns:
        """A Predict call of columns (_wire's bytes): its answer's packed arrays."""
        try:
            return self._predict_raw(_wire.predict_request(model_id, columns, all_scores),
                                     timeout=self._timeout,
                                     metadata=self._with_model(model_id)).columns
        except grpc.RpcError as e:
            raise _raise(e) from None

    def _stream(self, method: str, request) -> list:
        try:
            return list(getattr(self._stub, method)(
                request, timeout=self._timeout, metadata=self._with_model(request.model_id)))
        except grpc.RpcError as e:
            raise _raise(e) from None

    def _learn(self, model_id: str,
               requests: Iterator[bytes]) -> Iterator[pb.LearnResponse]:
        try:
            yield from self._learn_raw(requests, metadata=self._with_model(model_id))
        except grpc.RpcError as e:
            raise _raise(e) from None

    def health(self) -> None:
        """Returns if the server is serving (grpc.health.v1); raises PerceptronError if not."""
        check = self._channel.unary_unary("/grpc.health.v1.Health/Check",
                                          request_serializer=None, response_deserializer=None)
        try:
            # HealthCheckRequest{} is empty; the answer's field 1 is the status, SERVING = 1.
            answer = check(b"", timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise _raise(e) from None
        if answer != b"\x08\x01":
            raise PerceptronError(grpc.StatusCode.UNAVAILABLE, "the server is not serving")

    def server_status(self) -> pb.ServerStatus:
        """The server itself: its models, durability, whether its store writes (store_writing,
        store_error) and its memory (resident_memory_bytes, allocated_bytes, ...)."""
        return self._call("GetServerStatus", pb.GetServerStatusRequest())

    def model(self, model_id: str) -> Model:
        """The model of this id (no call is made: a missing model fails at first use)."""
        return Model(self, model_id)

    def get_model(self, model_id: str) -> Model:
        """The model of this id, once the server says it exists (NOT_FOUND otherwise)."""
        self._call("GetModel", pb.GetModelRequest(model_id=model_id))
        return Model(self, model_id)

    def create_model(self, model_id: str, dimension: int = 0, algorithm: str = "classic", *,
                     eta: Optional[float] = None, bias: Optional[bool] = None,
                     bias_constant: Optional[float] = None, normalize: Optional[bool] = None,
                     gamma: Optional[float] = None,
                     comparator: Optional[Sequence[float] | Mapping[int, float]] = None,
                     kernel: Optional[str] = None, degree: Optional[int] = None,
                     c0: Optional[float] = None, sigma: Optional[float] = None,
                     kernel_budget: Optional[int] = None,
                     max_voted_vectors: Optional[int] = None, hash_bits: Optional[int] = None,
                     interactions: Optional[Sequence[str]] = None,
                     feature_names: Optional[Sequence[str]] = None,
                     classes: Optional[Sequence] = None,
                     idle_expiry: Optional[float] = None) -> Model:
        """Creates a model; unset options take the server's defaults (docs/design.md).
        hash_bits b: the model takes features by name, hashed into 2^b coordinates as Vowpal
        Wabbit hashes them (dimension may then be left 0); interactions: VW's -q pairs.
        feature_names: features by name without hashing, "name", "namespace^name" or
        "name=value" being coordinate i of the list (a name not in it is refused).
        classes: a multiclass model (docs/design.md section 2.8) of these 2..64 classes, in
        index order; numbers name the classes "0", "1", ... as labels then do (learn's y may be
        numbers or strings). idle_expiry (seconds): the server deletes the model once it has
        learned nothing for that long (a model made for a while); None keeps it.
        comparator (with gamma): u as d or d+1 numbers (a multiclass model's k such vectors one
        after another), or as a mapping {coordinate: value} of its non-zeros, the rest 0, as
        certificate() gives a wide model's: dict(zip(c.comparator_indices, c.comparator))."""
        if algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm {algorithm!r}: one of {', '.join(_ALGORITHMS)}")
        def put(message, name: str, value) -> None:
            """message.name = value, or a ValueError naming the option (protobuf's own
            says only "Value out of range: -3")."""
            try:
                setattr(message, name, value)
            except (TypeError, ValueError) as e:
                raise ValueError(f"{name} {value!r}: {e}") from None

        config = pb.ModelConfig(algorithm=_ALGORITHMS[algorithm])
        for name, value in (("dimension", dimension), ("eta", eta), ("bias", bias),
                            ("bias_constant", bias_constant),
                            ("normalize", normalize), ("gamma", gamma),
                            ("kernel_budget", kernel_budget),
                            ("max_voted_vectors", max_voted_vectors),
                            ("hash_bits", hash_bits), ("idle_expiry_seconds", idle_expiry)):
            if value is not None:
                put(config, name, value)
        if interactions is not None:
            config.interactions.extend(interactions)
        if feature_names is not None:
            config.feature_names.extend(feature_names)
        if classes is not None:
            config.classes.extend(_class_key(c) for c in classes)
        if comparator is not None:
            _set_comparator(config, comparator)
        if kernel is not None:
            if kernel not in _KERNELS:
                raise ValueError(f"kernel {kernel!r}: one of {', '.join(_KERNELS)}")
            config.kernel.type = _KERNELS[kernel]
            for name, value in (("degree", degree), ("c0", c0), ("sigma", sigma)):
                if value is not None:
                    put(config.kernel, name, value)
        self._call("CreateModel", pb.CreateModelRequest(model_id=model_id, config=config))
        return Model(self, model_id)

    def list_models(self) -> list:
        """Every model (pb.Model: id, configuration, creation time), following pages."""
        out, token = [], ""
        while True:
            r = self._call("ListModels", pb.ListModelsRequest(page_size=1000, page_token=token))
            out.extend(r.models)
            token = r.next_page_token
            if not token:
                return out

    def export_model(self, model_id: str) -> bytes:
        """The model as a portable blob."""
        return b"".join(c.blob for c in self._stream(
            "ExportModelChunks", pb.ExportModelRequest(model_id=model_id)))

    def import_model(self, blob: bytes, model_id: str = "") -> Model:
        """A model from a blob, under `model_id` or, if empty, the blob's own."""
        chunk = 1 << 20
        requests = [pb.ImportModelRequest(model_id=model_id if i == 0 else "",
                                          blob=blob[i:i + chunk])
                    for i in range(0, max(len(blob), 1), chunk)]
        try:
            m = self._stub.ImportModelChunks(iter(requests), timeout=self._timeout,
                                             metadata=self._with_model(model_id))
        except grpc.RpcError as e:
            raise _raise(e) from None
        return Model(self, m.model_id)


def list_models_across(addresses: Sequence[str], **options) -> list:
    """Every model of every shard behind a proxy, as (address, pb.Model) sorted by id (a model
    on two shards appears twice): ListModels names no model, so the proxy cannot route it.
    `options` are Client's (token, tls, timeout)."""
    out = []
    for address in addresses:
        with Client(address, **options) as c:
            try:
                out.extend((address, m) for m in c.list_models())
            except PerceptronError as e:
                raise PerceptronError(e.code, f"shard {address}: {e.message}") from None
    return sorted(out, key=lambda placed: placed[1].model_id)
