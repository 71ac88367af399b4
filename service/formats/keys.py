"""64-bit keys for (topic, document) pairs and a vectorised hash table over them.

Matching five million run lines against the qrels, and checking them for
duplicate documents, with string comparisons or sorts of strings costs seconds.
Here a document id is hashed once (a few whole-array passes over its bytes read
as 64-bit words) and combined with a topic number; the readers find repeated
keys by sorting them (integers: a vectorised sort), and the scoring looks them
up in an open-addressing table with linear probing, probed for all keys at
once; each round handles only the keys still unresolved. Callers confirm every
hash match on the bytes, so a collision can never change a result (it only
sends the caller to a slower exact path).
"""

from __future__ import annotations

import secrets

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
#: A secret per process, so the hash is keyed: ids cannot be crafted offline to share their
#: hashes or the table's slots (which would make linear probing quadratic in an upload).
#: Hashes are never stored or compared across processes.
_SEED = np.uint64(secrets.randbits(64))


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection on uint64 that spreads every input bit."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def hash_ids(values: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """Hash a ``bytes_`` array of ids (no NUL bytes inside an id).

    The id's bytes are read as little-endian 64-bit words; words past the id's
    length are skipped, so the hash does not depend on the array's width.
    """
    n = values.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    width = values.dtype.itemsize
    words = -(-width // 8)
    u8 = np.zeros((n, words * 8), dtype=np.uint8)
    u8[:, :width] = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    if lengths is None:
        lengths = (u8 != 0).sum(axis=1)
    return hash_words(u8.view("<u8"), lengths)


def hash_words(words: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`hash_ids` of ids given as (n, k) little-endian words, zero past each id's length.

    Word ``k`` is mixed into the ids longer than ``8 k`` bytes only, so the work
    is the ids' total length / 8 plus a pass per id, whatever the longest one.
    """
    n = words.shape[0]
    with np.errstate(over="ignore"):
        h = (lengths.astype(np.uint64) * _GOLDEN) ^ _SEED
    if n == 0:
        return h
    rows: np.ndarray | None = None  # the ids still being hashed (None: all)
    rest = lengths
    with np.errstate(over="ignore"):
        for k in range(words.shape[1]):
            if int(rest.min()) <= 8 * k:  # drop the ids hashed to their end
                keep = rest > 8 * k
                rows = np.flatnonzero(keep) if rows is None else rows[keep]
                rest = rest[keep]
                if rows.shape[0] == 0:
                    break
            step = np.uint64(k + 1) * _GOLDEN
            if rows is None:
                h = _mix((h ^ words[:, k]) + step)
            else:
                h[rows] = _mix((h[rows] ^ words[rows, k]) + step)
    return h


def topic_keys(doc_hashes: np.ndarray, topic_index: np.ndarray) -> np.ndarray:
    """One 64-bit key per (topic, document)."""
    with np.errstate(over="ignore"):
        return _mix(doc_hashes ^ ((topic_index.astype(np.uint64) + np.uint64(1)) * _GOLDEN))


class KeyTable:
    """An open-addressing table of uint64 keys, built and probed with array operations.

    Each round of probing handles only the keys still unresolved; the first round, which
    resolves most of them, works on the whole arrays without index arrays.
    """

    def __init__(self, keys: np.ndarray) -> None:
        n = keys.shape[0]
        # Load factor <= 1/8: linear probing then needs few rounds (each round is a
        # handful of whole-array passes), at 32 bytes of table per key (int32 slots).
        bits = max(4, int(np.ceil(np.log2(8 * n + 1))))
        self.mask = np.uint64((1 << bits) - 1)
        self.keys = keys
        slot_type = np.int32 if n < 2**31 else np.int64
        self.slots = np.full(1 << bits, -1, dtype=slot_type)
        #: (i, j) pairs with keys[i] == keys[j], i inserted first; empty when all distinct.
        self.equal_pairs: list[tuple[int, int]] = []
        pending = np.arange(n, dtype=np.int64)
        pos = (keys & self.mask).astype(np.int64)
        at = pos  # the slot each pending key tries this round
        mask = int(self.mask)
        while pending.shape[0]:
            occupant = self.slots[at]
            free = occupant == -1
            # Several pending keys may claim one free slot: the last write wins.
            claim, claim_at = pending[free], at[free]
            self.slots[claim_at] = claim
            won = self.slots[claim_at] == claim
            lost = np.concatenate([pending[~free], claim[~won]])
            if lost.shape[0] == 0:
                break
            holder = self.slots[pos[lost]]
            same = keys[holder] == keys[lost]
            if same.any():
                self.equal_pairs.extend(zip(holder[same].tolist(), lost[same].tolist()))
            pending = lost[~same]
            at = (pos[pending] + 1) & mask
            pos[pending] = at

    def find(self, queries: np.ndarray) -> np.ndarray:
        """Index into ``keys`` of each query, -1 where absent."""
        if self.keys.shape[0] == 0:
            return np.full(queries.shape[0], -1, dtype=np.int64)
        pos = (queries & self.mask).astype(np.int64)
        holder = self.slots[pos].astype(np.int64)
        empty = holder < 0
        hit = self.keys[holder] == queries  # an empty slot reads keys[-1]: masked next
        hit &= ~empty
        out = np.where(hit, holder, -1)
        active = np.flatnonzero(~(hit | empty))
        mask = int(self.mask)
        while active.shape[0]:
            at = (pos[active] + 1) & mask
            pos[active] = at
            holder = self.slots[at].astype(np.int64)
            empty = holder < 0
            hit = (self.keys[holder] == queries[active]) & ~empty
            out[active[hit]] = holder[hit]
            active = active[~(hit | empty)]
        return out
