"""What the client's calls take in, read into what the wire carries: examples as dense rows or a
sparse matrix, labels as -1/+1 or class indices, and examples by name (docs/design.md section
2.9)."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from perceptron.v1 import perceptron_pb2 as pb

from . import _wire


#: When a call is given no batch_size, an array's batches hold about this many bytes of values
#: (at most _MOST_ROWS rows, at least one): grpcio spends about half a millisecond on each
#: message whatever its size, so narrow rows go many to a message and wide ones few
#: (client/python/README.md). Lists of dicts by name go _NAMED_ROWS to a message, fewer where
#: their widest dict's features (16 bytes each and their text) would pass _BATCH_BYTES.
#: A client whose max_message_bytes is under twice _BATCH_BYTES sizes its batches to half its
#: limit instead.
_BATCH_BYTES = 2 << 20
_MOST_ROWS = 8192
_NAMED_ROWS = 1024


def _shown(value, as_text: bool = False) -> str:
    """repr(value) (or a string as it is, with as_text) for a message: its first 64 characters
    and its length when longer, so that a message does not repeat a long input whole."""
    r = value if as_text and isinstance(value, str) else repr(value)
    return r if len(r) <= 64 else f"{r[:64]}... ({len(r)} characters)"


def _not_text(e: UnicodeEncodeError) -> ValueError:
    """The error for a name or value that UTF-8 cannot encode (a lone surrogate)."""
    return ValueError(f"{_shown(e.object)}: a name or value with characters that are not "
                      f"Unicode text ({e.reason}); names and values are sent as UTF-8")


def _batch_rows(batch_size: Optional[int], kind: Optional[str] = None, rows=None,
                budget: int = _BATCH_BYTES) -> int:
    """`batch_size` if given, else the default for these rows ('dense' or 'sparse' from
    _rows, 'frame' for a DataFrame by name; none for a list of dicts by name, or reveals
    with no rows) in batches of about `budget` bytes."""
    if batch_size is not None:
        return batch_size
    if kind is None:  # a feature's reference, value and category, and its name's text
        widest = max(map(_named_row_bytes, rows), default=0) if rows is not None else 0
        return int(min(_NAMED_ROWS, max(1, budget // max(1, widest))))
    n = rows.shape[0]
    if kind == "frame":  # a feature's name, value and category, each column
        per_row = 12 * rows.shape[1]
    elif kind == "dense":
        per_row = 8 * rows.shape[1]
    else:  # a non-zero's index and value
        per_row = 12 * rows.nnz // n if n else 0
    return int(min(_MOST_ROWS, max(1, budget // max(8, per_row))))


#: The types of a dict's values that are one feature each (the common row).
_PLAIN_VALUES = frozenset({float, int, str, bool, type(None), np.float64, np.int64})


def _named_row_bytes(x) -> int:
    """About the bytes of a dict by name in a request, at most: 16 a feature and the text of
    its names and category (a string said again in the batch is sent once). 0 for what is
    not a dict of features: the encoder says why."""
    try:
        values = set(map(type, x.values()))
        if values <= _PLAIN_VALUES and set(map(type, x)) == {str}:
            n = 16 * len(x) + sum(map(len, x))
            if str in values:
                n += sum(len(v) for v in x.values() if type(v) is str)
            return n
        # (namespace, name) keys, namespaces of features, other types of value.
        return sum(16 + len(space) + len(name) + (len(v) if isinstance(v, str) else 0)
                   for space, name, v in _features(x))
    except (AttributeError, TypeError, ValueError):
        return 0


def _rows(x) -> tuple:
    """('dense', array) or ('sparse', csr) for a 2-D array-like or a scipy.sparse matrix."""
    if hasattr(x, "tocsr"):
        csr = x.tocsr()
        csr.sort_indices()
        return "sparse", csr
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1 and a.size == 0:  # an empty list: no rows, of any width
        a = a.reshape(0, 0)
    if a.ndim != 2:
        raise ValueError(f"examples must be 2-D (rows x features), not of shape {a.shape}")
    return "dense", np.ascontiguousarray(a)


def _labels(y, n: int) -> np.ndarray:
    """A binary model's labels as -1/+1, read as the command-line client reads a file's: +1
    or 1 (or True) is +1, -1 or 0 (or False) is -1; strings too ("+1", "0")."""
    a = np.asarray(y)
    if a.shape != (n,):
        raise ValueError(f"{a.shape[0] if a.ndim else 0} labels for {n} examples")
    if a.dtype.kind == "b":
        return np.where(a, 1, -1).astype(np.int64)
    if a.dtype.kind in "USO":
        out = np.empty(n, dtype=np.int64)
        for i, v in enumerate(a.tolist()):
            try:
                number = float(v)
            except (TypeError, ValueError):
                number = None
            if number not in (1.0, -1.0, 0.0):
                raise ValueError(f"label {_shown(v)} (example {i}) is not +1/1 or -1/0: a binary "
                                 "model's labels (create the model with classes=... for "
                                 "named classes)")
            out[i] = 1 if number == 1.0 else -1
        return out
    if a.dtype.kind not in "iuf":
        raise ValueError(f"labels of type {a.dtype} are not +1/1 or -1/0")
    bad = ~((a == 1) | (a == -1) | (a == 0))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(f"label {_shown(a[i])} (example {i}) is not +1/1 or -1/0: a binary "
                         "model's labels (create the model with classes=... for more classes)")
    return np.where(a == 1, 1, -1).astype(np.int64)


def _class_key(label) -> str:
    """A label as the name of a class: itself if a string, else its number written as an
    integer where it is one (3, 3.0 and numpy's 3 all name class "3")."""
    if isinstance(label, (str, np.str_)):
        return str(label)
    if isinstance(label, (bool, np.bool_)):
        raise ValueError(f"label {_shown(label)}: a class is named by a string or a number")
    f = float(label)
    return str(int(f)) if f.is_integer() else repr(f)


def _class_labels(y, n: int, classes: Sequence[str]) -> np.ndarray:
    """A multiclass model's labels as class indices: each label names a class (_class_key)."""
    a = np.asarray(y, dtype=object)
    if a.shape != (n,):
        raise ValueError(f"{a.shape[0] if a.ndim else 0} labels for {n} examples")
    index = {c: i for i, c in enumerate(classes)}
    out = np.empty(n, dtype=np.int64)
    for i, label in enumerate(a):
        at = index.get(_class_key(label))
        if at is None:
            shown = ", ".join(classes[:10]) + (", ..." if len(classes) > 10 else "")
            raise ValueError(f"label {_shown(label)} (example {i}) is not one of the model's "
                             f"{len(classes)} classes ({shown})")
        out[i] = at
    return out


def _is_named(x) -> bool:
    """Whether `x` is one example by name ({name: value}, {(namespace, name): value}) rather
    than by index ({index: value})."""
    return isinstance(x, Mapping) and any(not isinstance(k, (int, np.integer)) for k in x)


def _features(x: Mapping):
    """(namespace, name, value) of each feature of one example by name, in order, as the
    command-line client reads a JSON line's (docs/clients.md): a key is a name or (namespace,
    name), a dict value a namespace of features; a number is the value, a string v the
    categorical feature "name=v", True the value 1, and False or None no feature."""
    for key, value in x.items():
        if isinstance(key, tuple):
            if len(key) != 2:
                raise ValueError(f"feature {_shown(key)}: a key is a name or (namespace, name)")
            space, name = str(key[0]), str(key[1])
        elif isinstance(value, Mapping):
            for inner, v in value.items():
                if isinstance(v, Mapping):
                    raise ValueError(f"feature {key}/{inner}: a namespace holds features, "
                                     "not namespaces")
                yield from _feature(str(key), str(inner), v)
            continue
        else:
            space, name = "", str(key)
        yield from _feature(space, name, value)


def _feature(space: str, name: str, value):
    if value is None or value is False or (isinstance(value, np.bool_) and not value):
        return
    if isinstance(value, (str, np.str_)):
        yield space, name, str(value)
        return
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"feature {_shown(name, True)}: {_shown(value)} is not a number, a string "
                         "or a boolean") from None
    except OverflowError:
        raise ValueError(f"feature {_shown(name, True)}: {_shown(value)} is too large for a "
                         "double") from None
    yield space, name, number


class _Table(dict):
    """A batch's table of strings, each to its index in the order added."""

    def ref(self, text: str) -> int:
        """text's index, added if new."""
        k = self.get(text)
        if k is None:
            k = self[text] = len(self)
        return k

    def refs(self, words: list) -> np.ndarray:
        """Each word's index + 1 (added if new), 0 for None."""
        return np.array([0 if w is None else self.ref(w) + 1 for w in words], dtype=np.int64)


def _is_frame(x) -> bool:
    """Whether `x` is a pandas DataFrame (told by its parts, without importing pandas)."""
    return hasattr(x, "columns") and hasattr(x, "itertuples") and hasattr(x, "notna")


def _numeric_frame(frame) -> bool:
    """Whether every column of a DataFrame holds numbers (or booleans)."""
    return all(getattr(t, "kind", "O") in "biuf" for t in frame.dtypes)


def _frame_rows(frame) -> list:
    """A DataFrame's rows as dicts by name, as the command-line client reads a CSV file by its
    header (docs/clients.md): a column's name is a feature's (a pair of a MultiIndex is
    (namespace, name)), a number its value, a string or a category the categorical feature
    "column=value"; a missing cell (NaN, None, pandas' NA or NaT) is no feature, as an empty
    cell is; booleans as in a dict (True the value 1, False no feature)."""
    _frame_keys(frame)
    columns = list(frame.columns)
    present = frame.notna().to_numpy()
    if present.all():
        return [dict(zip(columns, values))
                for values in frame.itertuples(index=False, name=None)]
    return [{c: v for c, v, here in zip(columns, values, keep) if here}
            for values, keep in zip(frame.itertuples(index=False, name=None), present)]


def _frame_keys(frame) -> list:
    """(namespace, name) of each column of a DataFrame (a MultiIndex's pairs are namespace and
    name); ValueError for two columns of one name, which would be one feature."""
    columns = list(frame.columns)
    if len(set(columns)) != len(columns):
        seen: set = set()
        twice = next(c for c in columns if c in seen or seen.add(c))
        raise ValueError(f"the DataFrame has two columns named {_shown(twice)}: a column's "
                         "name is a feature's")
    keys = []
    for c in columns:
        if isinstance(c, tuple):
            if len(c) != 2:
                raise ValueError(f"feature {_shown(c)}: a key is a name or (namespace, name)")
            keys.append((str(c[0]), str(c[1])))
        else:
            keys.append(("", str(c)))
    return keys


def _cells(space: str, name: str, cells, present: np.ndarray, values: np.ndarray,
           categories: list) -> None:
    """Reads a column's cells (Python objects) where present as _feature reads a dict's value:
    a number into values, a string into categories (else None), True the value 1, False (and
    None) not present."""
    for i in np.flatnonzero(present):
        read = None
        for _, _, read in _feature(space, name, cells[i]):
            pass
        if read is None:
            present[i] = False
        elif isinstance(read, str):
            categories[i] = read
        else:
            values[i] = read


def _frame_batches(frame, labels: Optional[np.ndarray], batch_size: int):
    """A DataFrame's rows by name as columnar batches of `batch_size` rows (docs/design.md
    section 2.9), encoded column by column: row for row and feature for feature what
    _named_columns sends of _frame_rows(frame) (each batch's table of strings may be in another
    order). Every cell is read here, so that a cell the wire cannot carry raises ValueError
    before any batch is sent; the batches are encoded as they are taken."""
    keys = _frame_keys(frame)
    n = len(frame)
    table = _Table()
    # Each column read: ("rows", present, values or None, string references + 1 or None) over
    # the rows, or ("codes", codes, and by code (the last for -1, a missing cell) present,
    # value, string reference + 1). A reference + 1 of 0 is a number.
    read = []
    for j, (space, name) in enumerate(keys):
        column = frame.iloc[:, j]
        kind = getattr(column.dtype, "kind", "O")
        if kind in "iuf":
            v = column.to_numpy(dtype=np.float64, na_value=np.nan)
            read.append(("rows", ~np.isnan(v), v, None))
        elif kind == "b":  # True the value 1; False (and a missing cell) no feature
            read.append(("rows", column.to_numpy(dtype=bool, na_value=False), None, None))
        elif hasattr(column, "cat"):  # each category read once, then looked up by code
            read.append(_coded(space, name, column.cat.codes.to_numpy(),
                               list(column.cat.categories), table))
        elif bool in set(map(type, cells := column.tolist())):
            # Cell by cell: told apart by value, True would be 1 and False 0.
            here = column.notna().to_numpy()
            words = [None] * n
            v = np.ones(n)
            _cells(space, name, cells, here, v, words)
            read.append(("rows", here, v, table.refs(words)))
        else:  # each distinct value read once, as a category
            codes, distinct = column.factorize()  # a missing cell: -1
            read.append(_coded(space, name, codes, list(distinct), table))
    names = np.array([table.ref(name) for _, name in keys], dtype=np.int64)
    spaces = np.array([table.ref(space) for space, _ in keys], dtype=np.int64)
    try:
        encoded = [t.encode() for t in table]
    except UnicodeEncodeError as e:
        raise _not_text(e) from None
    spaced = np.array([bool(space) for space, _ in keys], dtype=bool)
    return _encoded_batches(read, n, names, spaces, spaced, encoded, labels, batch_size)


def _coded(space: str, name: str, codes: np.ndarray, distinct: list, table: "_Table"):
    """_frame_batches' reading of a column from its cells' codes into `distinct` (-1: a
    missing cell): each distinct value read once."""
    m = len(distinct)
    kept, values, words = np.ones(m + 1, dtype=bool), np.ones(m + 1), [None] * m
    kept[m] = False  # code -1
    _cells(space, name, distinct, kept[:m], values[:m], words)
    return ("codes", codes, kept, values, table.refs(words + [None]))


def _encoded_batches(read, n, names, spaces, spaced, encoded, labels, batch_size):
    """_frame_batches' batches, from the columns it read: each batch's cells gathered into
    arrays of its rows by columns (made once, the size of a batch), then its features in row
    order."""
    k = len(read)
    rows = min(n, batch_size)
    present = np.empty((rows, k), dtype=bool)
    values = np.empty((rows, k))
    refs = np.empty((rows, k), dtype=np.int64)
    all_names, all_spaces, all_spaced = (np.tile(a, rows) for a in (names, spaces, spaced))
    used = np.zeros(len(encoded), dtype=bool)
    for s in range(0, n, batch_size):
        e = min(n, s + batch_size)
        b = e - s
        p, v, r = present[:b], values[:b], refs[:b]
        for j, c in enumerate(read):
            if c[0] == "rows":
                p[:, j] = c[1][s:e]
                v[:, j] = 1.0 if c[2] is None else c[2][s:e]
                r[:, j] = 0 if c[3] is None else c[3][s:e]
            else:
                codes = c[1][s:e]
                p[:, j], v[:, j], r[:, j] = c[2][codes], c[3][codes], c[4][codes]
        mask = p.ravel()
        f_names = all_names[:b * k][mask]
        f_values = v.ravel()[mask]
        f_refs = r.ravel()[mask]
        # Only the fields that say something, as _named_columns sends them.
        f_spaces = all_spaces[:b * k][mask] if all_spaced[:b * k][mask].any() else None
        if not np.any(f_values != 1.0):
            f_values = None
        words = f_refs[f_refs > 0] - 1
        # The batch's own table: the strings its features refer to, renumbered in order.
        used[:] = False
        used[f_names] = True
        used[words] = True
        if f_spaces is not None:
            used[f_spaces] = True
        at = (np.cumsum(used) - 1).astype(np.uint64)
        categories = None
        if words.size:
            categories = np.where(f_refs > 0, at[np.maximum(f_refs - 1, 0)] + np.uint64(1),
                                  np.uint64(0))
        yield _wire.named_columns(
            p.sum(axis=1).cumsum().astype(np.uint64), at[f_names],
            None if f_spaces is None else at[f_spaces], f_values, categories,
            [encoded[u] for u in np.flatnonzero(used)], None if labels is None else labels[s:e])


def _named(x: Mapping, out: pb.NamedFeatures) -> None:
    """Fills `out` from {name: value} or {(namespace, name): value} (_features; docs/design.md
    section 2.9). An example whose every value is None or False has no feature, and is sent
    as such (only the bias)."""
    out.SetInParent()
    try:
        for space, name, value in _features(x):
            f = out.features.add()
            f.space, f.name = space, name
            if isinstance(value, str):
                f.category = value
            else:
                f.number = value
    except UnicodeEncodeError as e:
        raise _not_text(e) from None


def _named_columns(rows: Sequence[Mapping], labels: Optional[np.ndarray]) -> bytes:
    """Columns of rows by name (docs/design.md section 2.9): a table of the batch's strings (one
    run of bytes) and packed references into it, the same rows as _named's items would be, in the
    same order."""
    table = _Table()
    ref = table.ref
    names, spaces, values, categories, ends = [], [], [], [], []
    for x in rows:
        if not isinstance(x, Mapping):
            raise ValueError(f"row {len(ends)}: a row by name is a dict, not {type(x).__name__}")
        start = len(names)
        # The common row first, inline: keys that are names or (namespace, name) pairs of
        # strings, values that are floats, ints or strings. Anything else (and any row
        # with it) goes through _features, from the row's start: the same features.
        for key, value in x.items():
            kind, key_kind = type(value), type(key)
            if key_kind is str:
                space, name = "", key
            elif (key_kind is tuple and len(key) == 2 and type(key[0]) is str
                  and type(key[1]) is str):
                space, name = key
            else:
                break
            if kind is float or kind is int:
                try:
                    values.append(float(value))
                except OverflowError:
                    break  # an int past a double's range: _features names it
                names.append(ref(name))
                categories.append(0)
            elif kind is str:
                names.append(ref(name))
                categories.append(ref(value) + 1)
                values.append(1.0)
            else:
                break
            spaces.append(space)
        else:
            ends.append(len(names))
            continue
        del names[start:], spaces[start:], categories[start:], values[start:]
        for space, name, value in _features(x):
            names.append(ref(name))
            spaces.append(space)
            if isinstance(value, str):
                categories.append(ref(value) + 1)
                values.append(1.0)
            else:
                categories.append(0)
                values.append(float(value))
        ends.append(len(names))
    c = pb.Columns()
    c.row_ends.extend(ends)
    c.named_names.extend(names)
    if any(spaces):
        c.named_spaces.extend(ref(space) for space in spaces)
    if any(v != 1.0 for v in values):
        c.named_values.extend(values)
    if any(categories):
        c.named_categories.extend(categories)
    # The table as one run of UTF-8 bytes and each string's length in bytes (Columns.text,
    # text_lengths): an ASCII string's length is its length in characters.
    text = "".join(table)
    if text.isascii():
        c.text = text.encode()
        c.text_lengths.extend(map(len, table))
    else:
        try:
            encoded = [t.encode() for t in table]
        except UnicodeEncodeError as e:
            raise _not_text(e) from None
        c.text = b"".join(encoded)
        c.text_lengths.extend(map(len, encoded))
    if labels is not None:
        c.labels.extend(int(v) for v in labels)
    return c.SerializeToString()
