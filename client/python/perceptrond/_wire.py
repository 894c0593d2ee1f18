"""Learn and Predict requests as columns (docs/design.md section 4), encoded from numpy arrays
straight to the protobuf wire format: a packed repeated field is a tag, a length and the values,
so a batch is a few array operations, with no value passing through Python one at a time. The
answers' scores and labels are read back from their bytes the same way (column_answers)."""
from __future__ import annotations

import numpy as np

# Field tags (field number << 3 | wire type 2, length-delimited).
_LEARN_MODEL_ID = 0x0A  # LearnRequest.model_id = 1
_LEARN_COLUMNS = 0x1A  # LearnRequest.columns = 3
_LEARN_IF_EXAMPLES = 0x20  # LearnRequest.if_examples = 4 (varint)
_PREDICT_MODEL_ID = 0x0A  # PredictRequest.model_id = 1
_PREDICT_ALL_SCORES = 0x18  # PredictRequest.all_scores = 3 (varint)
_PREDICT_COLUMNS = 0x22  # PredictRequest.columns = 4
_DENSE = 0x0A  # Columns.dense = 1 (packed double)
_ROW_ENDS = 0x12  # Columns.row_ends = 2 (packed uint32)
_VALUES = 0x22  # Columns.values = 4 (packed double)
_LABELS = 0x2A  # Columns.labels = 5 (packed sint32)
_REVEAL_IDS = 0x32  # Columns.reveal_ids = 6 (packed uint64)
_REVEAL_LABELS = 0x3A  # Columns.reveal_labels = 7 (packed sint32)
_DENSE_ROWS = 0x40  # Columns.dense_rows = 8 (varint)
_FIXED_INDICES = 0x4A  # Columns.fixed_indices = 9 (packed fixed32)
_NAMED_NAMES = 0x5A  # Columns.named_names = 11 (packed uint32)
_NAMED_SPACES = 0x62  # Columns.named_spaces = 12 (packed uint32)
_NAMED_VALUES = 0x6A  # Columns.named_values = 13 (packed double)
_NAMED_CATEGORIES = 0x72  # Columns.named_categories = 14 (packed uint32)
_TEXT = 0x7A  # Columns.text = 15 (bytes)
_TEXT_LENGTHS = b"\x82\x01"  # Columns.text_lengths = 16 (packed uint32): a two-byte tag


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varints(values: np.ndarray) -> bytes:
    """Unsigned integers (below 2**64) as concatenated protobuf varints."""
    v = np.ascontiguousarray(values, dtype=np.uint64)
    if v.size == 0:
        return b""
    top = int(v.max())
    if top < 0x80:  # a byte each
        return v.astype(np.uint8).tobytes()
    # As many 7-bit groups as the largest value has.
    most = (top.bit_length() + 6) // 7
    shifts = np.arange(most, dtype=np.uint64) * np.uint64(7)
    groups = (v[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    # A value takes as many bytes as its highest non-zero 7-bit group, at least one.
    nonzero = groups != 0
    length = np.where(nonzero.any(axis=1), most - np.argmax(nonzero[:, ::-1], axis=1), 1)
    k = np.arange(most)[None, :]
    more = (k < (length[:, None] - 1)).astype(np.uint64) << np.uint64(7)
    encoded = (groups | more).astype(np.uint8)
    return encoded[k < length[:, None]].tobytes()


def zigzag_labels(labels: np.ndarray) -> bytes:
    """sint32 values as varints (zigzag: n -> 2n for n >= 0, -2n - 1 for n < 0)."""
    v = np.asarray(labels, dtype=np.int64)
    return varints(np.where(v >= 0, 2 * v, -2 * v - 1).astype(np.uint64))


def unit_labels(labels: np.ndarray) -> bytes:
    """Labels as sint32 varints: where they are all -1 or +1 (a binary model's), one byte
    each, 1 or 2; else (a multiclass model's class indices) as zigzag_labels."""
    a = np.asarray(labels)
    if not np.all((a == 1) | (a == -1)):
        return zigzag_labels(a)
    return np.where(a > 0, 2, 1).astype(np.uint8).tobytes()


class Message:
    """A message's encoding as a list of parts (byte strings, and numpy arrays' memory as
    they are), joined once when it is sent (bytes(message)): a batch's values are copied once,
    into the request, rather than once per field and message they are nested in."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list = []
        self.size = 0

    def add(self, part) -> "Message":
        """Appends bytes, or a Message's parts."""
        if isinstance(part, Message):
            self.parts.extend(part.parts)
            self.size += part.size
        else:
            self.parts.append(part)
            self.size += len(part)
        return self

    def field(self, tag: int, payload) -> "Message":
        """Appends a length-delimited field: `payload` is bytes, an array's memory or a Message."""
        size = payload.size if isinstance(payload, Message) else len(payload)
        self.parts.append(bytes([tag]) + varint(size))
        self.size += len(self.parts[-1])
        return self.add(payload)

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


def _memory(a, dtype: str) -> memoryview:
    """The bytes of `a` as `dtype` (little-endian, C order), with no copy when `a` already is."""
    return memoryview(np.ascontiguousarray(a, dtype=dtype)).cast("B")


def learn_request(model_id: str, columns, if_examples: int | None = None) -> bytes:
    """A serialized LearnRequest: the model id (if given), the columns (bytes or a Message)
    and the condition if_examples (if given)."""
    m = Message()
    if model_id:
        m.field(_LEARN_MODEL_ID, model_id.encode())
    m.field(_LEARN_COLUMNS, columns)
    if if_examples is not None:
        m.add(bytes([_LEARN_IF_EXAMPLES]) + varint(if_examples))
    return bytes(m)


def predict_request(model_id: str, columns, all_scores: bool) -> bytes:
    """A serialized PredictRequest of columns (bytes or a Message), asking for a multiclass
    model's every class score if `all_scores`."""
    m = Message().field(_PREDICT_MODEL_ID, model_id.encode())
    if all_scores:
        m.add(bytes([_PREDICT_ALL_SCORES, 1]))
    return bytes(m.field(_PREDICT_COLUMNS, columns))


def dense_columns(rows: np.ndarray, labels: np.ndarray | None) -> Message:
    """Columns of dense rows (float64, C order) and, if given, their labels (-1 or +1, or
    class indices)."""
    m = Message().field(_DENSE, _memory(rows, "<f8"))
    if labels is not None:
        m.field(_LABELS, unit_labels(labels))
    return m.add(bytes([_DENSE_ROWS]) + varint(rows.shape[0]))


def check_indices(indices: np.ndarray) -> None:
    """Feature indices must fit the wire's fixed32: ValueError if one does not."""
    if indices.size and (indices.min() < 0 or indices.max() >= 2**32):
        raise ValueError("feature indices must be >= 0 and below 2**32")


def sparse_columns(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                   labels: np.ndarray | None) -> Message:
    """Columns of CSR rows (indptr as scipy's, starting at any offset) and, if given, their
    labels (-1 or +1, or class indices)."""
    indices = np.asarray(indices)
    check_indices(indices)
    start = int(indptr[0])
    ends = np.asarray(indptr[1:], dtype=np.int64) - start
    # In field-number order, as protobuf writes them (any order parses alike).
    m = Message().field(_ROW_ENDS, varints(ends.astype(np.uint64)))
    m.field(_VALUES, _memory(values, "<f8"))
    if labels is not None:
        m.field(_LABELS, unit_labels(labels))
    return m.field(_FIXED_INDICES, _memory(indices, "<u4"))


def named_columns(ends, names, spaces, values, categories, strings: list, labels) -> Message:
    """Columns of rows by name (docs/design.md section 2.9) from arrays: row_ends, the features'
    references into the table `strings` (names; spaces, or None for the default namespace's
    only; values, or None for 1s; categories, 0 or a string's reference + 1, or None for none),
    the table as UTF-8 bytes (sent as text and text_lengths), and the labels if given."""
    m = Message().field(_ROW_ENDS, varints(ends))
    if labels is not None:
        m.field(_LABELS, unit_labels(labels))
    m.field(_NAMED_NAMES, varints(names))
    if spaces is not None:
        m.field(_NAMED_SPACES, varints(spaces))
    if values is not None:
        m.field(_NAMED_VALUES, _memory(values, "<f8"))
    if categories is not None:
        m.field(_NAMED_CATEGORIES, varints(categories))
    m.field(_TEXT, b"".join(strings))
    lengths = varints(np.fromiter(map(len, strings), dtype=np.uint64, count=len(strings)))
    return m.add(_TEXT_LENGTHS + varint(len(lengths))).add(lengths)


def reveal_columns(ids: np.ndarray, labels: np.ndarray) -> Message:
    return Message().field(_REVEAL_IDS, varints(ids)).field(_REVEAL_LABELS,
                                                             zigzag_labels(labels))


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def column_answers(raw: bytes) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The scores (packed double) and labels (packed sint32) of a serialized ColumnResults, read
    as arrays without a Python object per value: the scores as float64, the labels as int64
    where each is one byte (|label| < 64: -1/+1, or a class index below 64). Either is None
    where it is not in that form (the caller reads it from the message instead)."""
    scores = labels = None
    found_scores = found_labels = False
    view = memoryview(raw)
    pos = 0
    while pos < len(raw):
        tag, pos = _read_varint(raw, pos)
        field, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            _, pos = _read_varint(raw, pos)
            continue
        if wire_type == 1 or wire_type == 5:
            pos += 8 if wire_type == 1 else 4
            if field in (1, 2):  # a value not packed
                return None, None
            continue
        if wire_type != 2:
            return None, None
        length, pos = _read_varint(raw, pos)
        body = view[pos:pos + length]
        pos += length
        if field == 1:
            # A packed field split in two parts (allowed, never written so) is read the slow way.
            scores = None if found_scores or length % 8 else np.frombuffer(body, dtype="<f8")
            found_scores = True
        elif field == 2:
            b = np.frombuffer(body, dtype=np.uint8)
            if found_labels or (b >= 0x80).any():
                labels = None
            else:
                v = b.astype(np.int64)
                labels = (v >> 1) ^ -(v & 1)
            found_labels = True
    if not found_scores:
        scores = np.zeros(0)
    if not found_labels:
        labels = np.zeros(0, dtype=np.int64)
    return scores, labels
