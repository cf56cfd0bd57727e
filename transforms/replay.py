"""Re-pack the requests of a stored run and compare each packet with the stored one.

The requests go through the batch job's own pack step (any catalog mode),
each at the event time its stored manifest recorded (`packer.replay.replayable`).
"""

from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam import pvalue

from packer.replay import compare, missing, replayable
from schemas import ManifestRow, Request
from schemas.replay import ReplayRow

MISSING = "missing"


def _to_replay(element: tuple[Any, dict[str, Iterable[Any]]]) -> Iterator[Any]:
    _, groups = element
    stored = list(groups["stored"])
    requests = list(groups["requests"])
    for manifest in stored:
        if requests:
            yield replayable(requests[0], manifest)
        else:
            yield pvalue.TaggedOutput(MISSING, missing(manifest))


def _compare(element: tuple[Any, dict[str, Iterable[Any]]]) -> Iterator[ReplayRow]:
    _, groups = element
    replayed = list(groups["replayed"])
    refused = [letter.error for letter in groups["refused"]]
    if not replayed and not refused:
        return  # no input record: reported as request_missing
    for manifest in groups["stored"]:
        yield compare(manifest, replayed[0] if replayed else None, "; ".join(refused))


class ReplayRun(beam.PTransform):
    """Requests + the run's stored manifests -> one `ReplayRow` per stored manifest."""

    def __init__(self, stored: beam.PCollection[ManifestRow], pack: beam.PTransform) -> None:
        super().__init__()
        self._stored = stored
        self._pack = pack

    def expand(self, requests: beam.PCollection[Request]) -> beam.PCollection[ReplayRow]:
        stored = self._stored | "KeyStored" >> beam.Map(lambda m: (m.request_id, m))
        joined = (
            {
                "stored": stored,
                "requests": requests | "KeyRequests" >> beam.Map(lambda r: (r.request_id, r)),
            }
            | "JoinInputs" >> beam.CoGroupByKey()
            | "AsPacked" >> beam.FlatMap(_to_replay).with_outputs(MISSING, main="requests")
        )
        packed = joined.requests | "Repack" >> self._pack
        compared = (
            {
                "stored": stored,
                "replayed": packed.manifests
                | "KeyReplayed" >> beam.Map(lambda m: (m.request_id, m)),
                "refused": packed.dead_letters
                | "KeyRefused" >> beam.Map(lambda d: (d.request_id, d)),
            }
            | "JoinPackets" >> beam.CoGroupByKey()
            | "Compare" >> beam.FlatMap(_compare)
        )
        return (compared, joined[MISSING]) | "AllRows" >> beam.Flatten()
