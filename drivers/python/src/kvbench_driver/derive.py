"""The derivations of docs/plan-format.md, vectorised with numpy: every function takes arrays of
records, versions or operation numbers and returns arrays or lists of bytes for a whole chunk,
because one numpy call per chunk costs far less than Python arithmetic per operation.
numpy's uint64 arithmetic on arrays wraps, as the spec requires."""

from __future__ import annotations

import math
import threading

import numpy as np

U64 = np.uint64
G = U64(0x9E3779B97F4A7C15)
M32 = U64(0xFFFFFFFF)
POOL_BITS = 20
POOL = 1 << POOL_BITS
BLOCK = 1024
SEP = b"\n"  # not in PRINTABLE: Dataset.differ joins values with it
PRINTABLE = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'()*+,-./:;<=>?@[]^_`{|}~ ", np.uint8)


DIGITS4 = np.frombuffer(b"".join(b"%04d" % i for i in range(10000)), np.uint32)


def u64(x) -> np.ndarray:
    return np.asarray(x, dtype=U64).reshape(-1)


def mix64(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> U64(30))
    z = z * U64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> U64(27))
    z = z * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


def rnd(seed, i) -> np.ndarray:
    return mix64(u64(seed) + (u64(i) + U64(1)) * G)


def below(x: np.ndarray, n) -> np.ndarray:
    """High 64 bits of the 128-bit product x * n, from 32-bit halves."""
    n = u64(n)
    if len(n) == 1 and n[0] >> U64(32) == 0:  # (x_hi * n + (x_lo * n >> 32)) >> 32 cannot overflow
        return ((x >> U64(32)) * n + (((x & M32) * n) >> U64(32))) >> U64(32)
    xl, xh, nl, nh = x & M32, x >> U64(32), n & M32, n >> U64(32)
    lohi = xl * nh
    hilo = xh * nl
    cross = ((xl * nl) >> U64(32)) + (hilo & M32) + lohi
    return xh * nh + (hilo >> U64(32)) + (cross >> U64(32))


def in_pool(x: np.ndarray) -> np.ndarray:
    """below(x, POOL): POOL is a power of two, so the high 64 bits of x * POOL are a shift of x."""
    return x >> U64(64 - POOL_BITS)


def unit(x: np.ndarray) -> np.ndarray:
    return (x >> U64(11)).astype(np.float64) * (2.0 ** -53)


def fnv(r: np.ndarray) -> np.ndarray:
    """ycsbhash as unsigned: FNV-1a 64 over the little-endian bytes, then Java's Math.abs."""
    h = np.full(r.shape, 0xCBF29CE484222325, U64)
    for b in range(8):
        h = (h ^ ((r >> U64(8 * b)) & U64(0xFF))) * U64(0x100000001B3)
    return np.abs(h.view(np.int64)).view(U64)


def zipf(u: np.ndarray, items, zetan, eta: float, theta: float, alpha: float) -> np.ndarray:
    """YCSB's ZipfianGenerator.nextLong; items and zetan may be arrays (latest)."""
    uz = u * zetan
    with np.errstate(all="ignore"):
        big = np.floor(np.asarray(items, np.float64) * np.power(eta * u - eta + 1.0, alpha))
    return np.where(uz < 1.0, 0, np.where(uz < 1.0 + math.pow(0.5, theta), 1, big.astype(U64))).astype(U64)


def perm(n: int, key: np.ndarray, i: np.ndarray) -> np.ndarray:
    """A 4-round Feistel network on an even number of bits, cycle-walking until below n."""
    if n == 1:
        return np.zeros(len(i), U64)
    bits = max(2, (n - 1).bit_length())
    bits += bits & 1
    half, mask = U64(bits // 2), U64((1 << (bits // 2)) - 1)
    ks = [rnd(key, j) for j in range(4)]
    x, todo = u64(i).copy(), np.arange(len(i))
    while len(todo):
        y = x[todo]
        left, right = y >> half, y & mask
        for k in ks:
            kj = k if len(k) == 1 else k[todo]
            left, right = right, left ^ (mix64(right ^ kj) & mask)
        x[todo] = (left << half) | right
        todo = todo[x[todo] >= U64(n)]
    return x


def joined(values: list) -> bytes | None:
    """The values joined with SEP, or None when one is not bytes (absent, or an error)."""
    try:
        return SEP.join(values)
    except TypeError:
        return None


class Dataset:
    """Keys and values of the job's dataset; `stored` data comes from the plan file."""

    def __init__(self, ds: dict, plan=None):
        self.ds, self.plan = ds, plan
        self.kind, self.width = ds["key"]["kind"], ds["key"].get("width", 0)
        v = ds["value"]
        self.min, self.max, self.random = v["min"], v["max"], v.get("content") == "random"
        self.json = ds["generator"] == "json-docs"
        self.stored = ds["generator"] == "stored"
        if self.stored and plan is None:
            raise ValueError("dataset `stored` needs a plan file")
        top = max(self.max, int(plan.value_lengths().max()) if self.stored and ds["total"] else 0)
        words = rnd(ds["pool_seed"], np.arange((POOL + top + 7) // 8, dtype=U64))
        self.pool = PRINTABLE[words.view(np.uint8) % 93][:POOL + top].tobytes()
        fixed = self.min == self.max and not (self.random or self.json or self.stored)
        self.local = threading.local()  # each thread's buffer of expected values (differ)
        # Every `min` bytes of the pool as one numpy item, item o starting at byte o (items
        # overlap): gathering items copies each value whole, several times faster than rows of a
        # sliding window view of single bytes.
        self.items = np.ndarray((POOL,), f"V{self.min}", self.pool, strides=(1,)) if fixed and self.min else None

    def keys(self, r: np.ndarray) -> list[bytes]:
        r = u64(r)
        if self.stored:
            return self.plan.keys(r)
        if self.kind in ("u32be", "u64be"):
            w = 4 if self.kind == "u32be" else 8
            return r.astype(f">u{w}").view(f"V{w}").tolist()
        if self.kind == "ycsb":
            return [b"user%d" % x for x in fnv(r).view(np.int64).tolist()]
        w = self.width
        if w == 0 or (len(r) and int(r.max()) >= 10 ** w):
            return [b"%0*d" % (w, x) for x in r.tolist()]
        # Four digits at a time from a table of "0000".."9999", only as many groups as the
        # largest record has (the others are "0000"), in 32 bits when it fits (numpy divides
        # those several times faster).
        groups = -(-w // 4)
        out = np.full((len(r), groups), DIGITS4[0], np.uint32)
        top = int(r.max()) if len(r) else 0
        used = -(-len(str(top)) // 4)
        r = r.astype(np.uint32) if top < 1 << 32 else r
        for g in range(groups - 1, groups - 1 - used, -1):
            out[:, g] = DIGITS4[r % 10000]
            r = r // 10000
        return out.view(np.uint8)[:, 4 * groups - w:].copy().view(f"V{w}").ravel().tolist()

    def values(self, r: np.ndarray, v: np.ndarray) -> list[bytes]:
        r, v = u64(r), u64(v)
        h = mix64(rnd(self.ds["value_seed"], r) ^ (v * G))
        if self.stored:
            lens = self.plan.value_lengths(r)
            out = self._printable(h, lens)
            return [s if x else stored for s, x, stored in zip(out, v.tolist(), self.plan.values(r))]
        lens = U64(self.min) + below(h, self.max - self.min + 1)
        if self.random:
            return self._random(h, lens)
        out = self._printable(h, lens)
        if self.json:
            return [b'{"text": "%s", "created_at": %d}' % (s, 1700000000 + x) for s, x in zip(out, r.tolist())]
        return out

    def offsets(self, r: np.ndarray, v: np.ndarray) -> np.ndarray | None:
        """Where value(r[i], v[i]) starts in the pool, when every value is `min` bytes of it."""
        if self.items is None:
            return None
        return in_pool(mix64(mix64(rnd(self.ds["value_seed"], r) ^ (u64(v) * G)))).astype(np.intp)

    def same(self, o: np.ndarray, found: list) -> bool:
        """Whether each found[i] is the `min` bytes of the pool at o[i] (at most BLOCK of them).
        The found values joined with a byte the pool never holds (SEP) are compared with the
        expected values laid out the same way: when equal, the join holds as many SEP as
        separators, so no found value holds one, and splitting both at SEP gives the two lists.
        An absent value or an error does not join. The expected values go to this thread's
        buffer, kept from block to block, so that malloc does not hand it back to the kernel."""
        w, n = self.min + 1, len(found)
        if getattr(self.local, "buf", None) is None:
            self.local.buf = bytearray(SEP * (BLOCK * w))
            self.local.rows = np.ndarray((BLOCK,), self.items.dtype, self.local.buf, offset=1, strides=(w,))
        got = joined(found)
        if got is None or len(got) != n * w - 1:
            return False
        self.local.rows[:n] = self.items[o]
        return self.local.buf.startswith(got, 1)

    def differ(self, r: np.ndarray, v: np.ndarray, found: list) -> list[int]:
        """Indices i where found[i] is not value(r[i], v[i]). Values of one length from the pool
        are compared BLOCK at a time (`same`), and one by one only in a block that differs."""
        o = self.offsets(r, v)
        if o is None:
            return [i for i, (f, e) in enumerate(zip(found, self.values(r, v))) if f != e]
        bad = []
        for a in range(0, len(found), BLOCK):
            got = found[a:a + BLOCK]
            if not self.same(o[a:a + BLOCK], got):
                want = self.items[o[a:a + BLOCK]].tolist()
                bad += [a + i for i, (f, e) in enumerate(zip(got, want)) if f != e]
        return bad

    def _printable(self, h: np.ndarray, lens) -> list[bytes]:
        pool = self.pool
        return [pool[o:o + n] for o, n in zip(in_pool(mix64(h)).tolist(), u64(lens).tolist())]

    def _random(self, h: np.ndarray, lens: np.ndarray) -> list[bytes]:
        words = (self.max + 7) // 8
        m = mix64(h[:, None] + (np.arange(words, dtype=U64) + U64(1)) * G)
        rows = m.view(np.uint8).reshape(len(h), words * 8)
        return [row[:n].tobytes() for row, n in zip(rows, lens.tolist())]


class Stream:
    """Operation k of an ops step: its kind, its record, the length of its scan."""

    def __init__(self, step: dict):
        self.step, self.dist = step, step["dist"]
        self.kinds = step.get("kinds") or [step["kind"]]
        self.thresholds = np.array(step.get("thresholds") or [], U64)

    def kind_index(self, k: np.ndarray) -> np.ndarray:
        if len(self.kinds) == 1:
            return np.zeros(len(k), np.intp)
        i = np.searchsorted(self.thresholds, rnd(self.step["kind_seed"], k), side="right")
        return np.minimum(i, len(self.kinds) - 1)

    def scan_lens(self, k: np.ndarray, p: np.ndarray) -> np.ndarray:
        lo, hi = self.step["scan"]["min"], self.step["scan"]["max"]
        if hi == 0:
            return u64(self.dist["n"]) - p
        return U64(lo) + below(rnd(self.step["len_seed"], k), hi - lo + 1)

    def records(self, k: np.ndarray, inserts_before: np.ndarray) -> np.ndarray:
        """Records of non-insert operations k; `inserts_before` gives last(k) (zipfian, latest)."""
        d, s = self.dist, self.step
        name, n = d["name"], U64(d["n"])
        x = rnd(s["rec_seed"], k)
        if name == "sequential":
            return (U64(d.get("start", 0)) + k) % n
        if name in ("shuffle", "load-order"):  # load-order: pass 0 of shuffle on every pass
            return perm(int(n), rnd(s.get("perm_seed", 0), k // n if name == "shuffle" else 0), k % n)
        if name == "uniform":
            return below(x, n)
        if name == "hot":
            return np.full(len(k), d["record"], U64)
        last = U64(s.get("last", 0)) + inserts_before
        if name == "latest":
            zetan, eta = self.latest_zeta(last)
            return last - zipf(unit(x), last, zetan, eta, d["theta"], d["alpha"])
        return self.scrambled(x, last, n)

    def scrambled(self, x0: np.ndarray, last: np.ndarray, n) -> np.ndarray:
        """YCSB's ScrambledZipfianGenerator, drawing again (x = rnd(x0, 0), rnd(x0, 1), ...)
        while the record is above the newest one, as YCSB's nextKeynum does."""
        d = self.dist
        rec = fnv(zipf(unit(x0), d["items"], d["zetan"], d["eta"], d["theta"], d["alpha"])) % n
        todo, i = np.flatnonzero(rec > last), 0
        while len(todo):
            x = unit(rnd(x0[todo], i))
            rec[todo] = fnv(zipf(x, d["items"], d["zetan"], d["eta"], d["theta"], d["alpha"])) % n
            todo, i = todo[rec[todo] > last[todo]], i + 1
        return rec

    def latest_zeta(self, last: np.ndarray):
        """zetan and eta for each newest record: YCSB's incremental zeta past the construction's
        count, summed term by term in order, and eta recomputed from that count and zetan."""
        d = self.dist
        count, theta = d["count"], d["theta"]
        top = int(last.max()) if len(last) else count
        cache = getattr(self, "_zeta", [d["zetan"]])
        while count + len(cache) - 1 < top:
            cache.append(cache[-1] + 1.0 / math.pow(count + len(cache), theta))
        self._zeta = cache
        grown = np.maximum(last.astype(np.int64) - count, 0)
        lo = int(grown.min()) if len(grown) else 0
        zetan = np.array(cache[lo:], np.float64)[grown - lo]
        zeta2 = 0.0 + 1.0 / math.pow(1, theta) + 1.0 / math.pow(2, theta)
        eta = np.where(grown == 0, d["eta"], (1 - math.pow(2.0 / count, 1 - theta)) / (1 - zeta2 / zetan))
        return zetan, eta
