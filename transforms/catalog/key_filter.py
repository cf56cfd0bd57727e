"""A Bloom filter of catalog keys: which catalog rows may be referenced, before any shuffle.

The join reads every catalog row but must shuffle only the referenced ones.
The referenced keys are known from the requests; a Bloom filter of them is a
few megabytes whatever the catalog size, built by a combiner (filters merge
by OR) and broadcast as a side input. A row whose key the filter rejects is
certainly not referenced and is dropped where it is read; a false positive
only sends an unreferenced row to the join, which finds no reference for it.
So the filter may waste work, never lose a document.

Sized for about four million distinct referenced keys at a 2% false-positive
rate (4 MiB, four probes); with more keys the rate grows and more rows reach
the join, the result unchanged. Rejected: a side input of the exact key set
(its size follows the request count, some tens of bytes a key), and filtering
inside the join (the whole catalog would cross the shuffle).
"""

import hashlib
from collections.abc import Iterable

import apache_beam as beam

from packer.catalog_slice import CatalogKey

BITS_LOG2 = 25
PROBES = 4
_MASK = (1 << BITS_LOG2) - 1


def _probes(key: CatalogKey) -> tuple[int, ...]:
    """The bit positions of a key: four 25-bit slices of one BLAKE2b digest."""
    digest = int.from_bytes(
        hashlib.blake2b(f"{key[0]}\x00{key[1]}".encode(), digest_size=16).digest(), "little"
    )
    return tuple((digest >> (BITS_LOG2 * i)) & _MASK for i in range(PROBES))


class KeyFilter:
    """A fixed-size Bloom filter over catalog keys."""

    def __init__(self, bits: bytearray | None = None) -> None:
        self.bits = bits if bits is not None else bytearray(1 << (BITS_LOG2 - 3))

    def add(self, key: CatalogKey) -> None:
        bits = self.bits
        for pos in _probes(key):
            bits[pos >> 3] |= 1 << (pos & 7)

    def __contains__(self, key: CatalogKey) -> bool:
        bits = self.bits
        return all(bits[pos >> 3] & (1 << (pos & 7)) for pos in _probes(key))

    def merge(self, other: "KeyFilter") -> "KeyFilter":
        """The union of two filters (bitwise OR), in place."""
        size = len(self.bits)
        union = int.from_bytes(self.bits, "little") | int.from_bytes(other.bits, "little")
        self.bits = bytearray(union.to_bytes(size, "little"))
        return self


class BuildKeyFilter(beam.CombineFn):
    """Catalog keys -> one `KeyFilter` holding all of them."""

    def create_accumulator(self) -> KeyFilter:
        return KeyFilter()

    def add_input(self, accumulator: KeyFilter, key: CatalogKey) -> KeyFilter:
        accumulator.add(key)
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[KeyFilter]) -> KeyFilter:
        merged: KeyFilter | None = None
        for acc in accumulators:
            merged = acc if merged is None else merged.merge(acc)
        return merged if merged is not None else KeyFilter()

    def extract_output(self, accumulator: KeyFilter) -> KeyFilter:
        return accumulator
