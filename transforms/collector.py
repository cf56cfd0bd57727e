"""The garbage collector's setting in a worker that packs: full collections rare.

A packing worker holds a large, long-lived heap: Beam and the protobuf modules
it generates, the catalog, the packer's memos, hundreds of thousands of
tracked objects that every full collection walks again. With Python's default
thresholds a 2,000-request batch run made 9 full collections, 1.65 s of its
9.6 s; the young collections, which find the packing garbage, took 0.3 s.
Waiting for 1,000 middle-generation collections instead of 10 before a full
one leaves the young ones as they are and makes full ones rare: in that run,
none after the workers' setup (the 4 left, 0.42 s, ran at the start), at the
same peak memory. A request's garbage is young, and the young collections
still free its cycles. A user's own pipeline that uses the pack step gets the
setting too: it only makes full collections rarer.

Rejected: `gc.freeze()` on the first element (measured: full collections 1.7 s
-> 1.1 s, and a streaming job's replaced catalog would stay frozen, never
collected); disabling the collector (a cycle that reaches the old generation
would leak until exit); raising the young threshold (it moved the young
collections' cost around without lowering it).
"""

import gc

FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones (Python's default: 10)."""


def make_full_collections_rare() -> None:
    """Raise the oldest generation's threshold to `FULL_COLLECTION_EVERY`, once per
    process (the call is idempotent); a higher setting already made is kept."""
    young, middle, old = gc.get_threshold()
    if old < FULL_COLLECTION_EVERY:
        gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
