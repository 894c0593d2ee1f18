"""Vowpal Wabbit's text-format hashing, written independently of the server's
C++ (core/feature_hash.cc) so that tests can check one against the other.

MurmurHash3_x86_32 as Austin Appleby published it; VW's hashstring (trim bytes
<= 0x20, a name of digits only is its number plus the seed); a namespace's hash
seeds its names' (the default namespace's is 0); a categorical value v of name
n hashes as hashstring(v, hashstring(n, namespace)); a pair of namespaces as
VW's -q: (h1 * 16777619) ^ h2 over the slots masked to the model's bits.
"""

MASK32 = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & MASK32


def murmur3_32(data: bytes, seed: int) -> int:
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & MASK32
    n = len(data)
    whole = n - n % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & MASK32
        k = _rotl(k, 15)
        k = (k * c2) & MASK32
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & MASK32
    k = 0
    tail = data[whole:]
    for j in reversed(range(len(tail))):
        k ^= tail[j] << (8 * j)
    if tail:
        k = (k * c1) & MASK32
        k = _rotl(k, 15)
        k = (k * c2) & MASK32
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK32
    h ^= h >> 16
    return h


def hashstring(text: str, seed: int) -> int:
    data = text.encode("utf-8")
    start, end = 0, len(data)
    while start < end and data[start] <= 0x20:
        start += 1
    while end > start and data[end - 1] <= 0x20:
        end -= 1
    data = data[start:end]
    if data and all(0x30 <= b <= 0x39 for b in data):
        return (int(data.decode()) + seed) & MASK32
    if not data:
        return seed & MASK32
    return murmur3_32(data, seed)


def slot(namespace: str, name: str, bits: int, category=None) -> int:
    space = hashstring(namespace, 0) if namespace else 0
    h = hashstring(name, space)
    if category is not None:
        h = hashstring(category, h)
    return h & ((1 << bits) - 1)


def triples(x):
    """A dict's features as the Python package reads them: a key (namespace, name) or a name in
    the empty namespace, each with its value."""
    out = []
    for key, value in x.items():
        space, name = key if isinstance(key, tuple) else ("", key)
        out.append((space, name, value))
    return out


def hash_example(features, bits, interactions=()):
    """features: (namespace, name, value-or-str) triples -> {slot: value}.

    Sums in the order given, drops zeros, as the server documents."""
    mask = (1 << bits) - 1
    terms = []
    letters = []
    for space, name, value in features:
        if isinstance(value, str):
            s, v = slot(space, name, bits, value), 1.0
        else:
            s, v = slot(space, name, bits), float(value)
        if v == 0.0:
            continue
        terms.append((s, v))
        letters.append(space[0] if space else " ")
    singles = len(terms)
    for pair in interactions:
        first = [i for i in range(singles) if letters[i] == pair[0]]
        second = [i for i in range(singles) if letters[i] == pair[1]]
        for p, i in enumerate(first):
            h1, v1 = terms[i]
            start = 0
            if pair[0] == pair[1]:
                start = p if v1 != 1.0 else p + 1
            for j in second[start:]:
                h2, v2 = terms[j]
                terms.append(((((h1 * 16777619) & MASK32) ^ h2) & mask, v1 * v2))
    sums = {}
    for s, v in sorted(terms, key=lambda t: t[0]):
        sums[s] = sums.get(s, 0.0) + v
    return {s: v for s, v in sums.items() if v != 0.0}
