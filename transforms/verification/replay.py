"""Re-pack the requests of a stored run and compare each packet with what the run folder holds.

The requests go through the batch job's own pack step (any catalog mode),
each at the event time its stored manifest recorded (`packer.verification.replay.replayable`).
The stored prompt lines are matched to their requests by the key their format
names them by, the stored exclusions by `request_id`; a line naming no request
of the run is a row of its own.
"""

from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam import pvalue

from packer.verification.replay import compare, line_key, missing, replayable, stray_line
from schemas import ExclusionRecord, ManifestRow, Request
from schemas.prompt_formats import answer_keys
from schemas.replay import ReplayRow

MISSING = "missing"
STRAY = "stray"


def _to_replay(element: tuple[Any, dict[str, Iterable[Any]]]) -> Iterator[Any]:
    _, groups = element
    stored = list(groups["stored"])
    requests = list(groups["requests"])
    for manifest in stored:
        if requests:
            yield replayable(requests[0], manifest)
        else:
            yield pvalue.TaggedOutput(MISSING, missing(manifest))


def _keyed_line(line: str) -> Iterator[Any]:
    key = line_key(line)
    if key is None:
        yield pvalue.TaggedOutput(STRAY, stray_line(None, line))
    else:
        yield key, line


def _owned_lines(element: tuple[str, dict[str, Iterable[Any]]]) -> Iterator[Any]:
    """Each stored line under the request its key names, or a stray row when none."""
    key, groups = element
    owners = sorted(set(groups["owners"]))
    for line in groups["lines"]:
        if not owners:
            yield pvalue.TaggedOutput(STRAY, stray_line(key, line))
        for owner in owners:
            yield owner, line


def _compare(
    element: tuple[Any, dict[str, Iterable[Any]]], lines_stored: bool, exclusions_stored: bool
) -> Iterator[ReplayRow]:
    _, groups = element
    replayed = list(groups["replayed"])
    refused = [letter.error for letter in groups["refused"]]
    if not replayed and not refused:
        return  # no input record: reported as request_missing
    line = next(iter(groups["replayed_lines"]), None)
    for manifest in groups["stored"]:
        yield compare(
            manifest,
            replayed[0] if replayed else None,
            "; ".join(refused),
            lines=(list(groups["lines"]) if lines_stored else None, line),
            exclusions=(
                list(groups["exclusions"]) if exclusions_stored else None,
                list(groups["replayed_exclusions"]),
            ),
        )


def _by_request(label: str, rows: beam.PCollection[Any]) -> beam.PCollection[Any]:
    return rows | f"Key{label}" >> beam.Map(lambda row: (row.request_id, row))


class ReplayRun(beam.PTransform):
    """Requests + the run's stored manifests (and, when the run folder holds them, its prompt
    lines and exclusions) -> one `ReplayRow` per stored manifest and per stray line."""

    def __init__(
        self,
        stored: beam.PCollection[ManifestRow],
        pack: beam.PTransform,
        lines: beam.PCollection[str] | None = None,
        exclusions: beam.PCollection[ExclusionRecord] | None = None,
    ) -> None:
        super().__init__()
        self._stored = stored
        self._pack = pack
        self._lines = lines
        self._exclusions = exclusions

    def expand(self, requests: beam.PCollection[Request]) -> beam.PCollection[ReplayRow]:
        stored = _by_request("Stored", self._stored)
        joined = (
            {"stored": stored, "requests": _by_request("Requests", requests)}
            | "JoinInputs" >> beam.CoGroupByKey()
            | "AsPacked" >> beam.FlatMap(_to_replay).with_outputs(MISSING, main="requests")
        )
        packed = joined.requests | "Repack" >> self._pack
        groups = {
            "stored": stored,
            "replayed": _by_request("Replayed", packed.manifests),
            "refused": _by_request("Refused", packed.dead_letters),
            "replayed_lines": packed.lines
            | "KeyReplayedLines" >> beam.Map(lambda p: (p.request_id, p.line)),
            "replayed_exclusions": _by_request("ReplayedExclusions", packed.exclusions),
        }
        strays = []
        if self._lines is not None:
            keyed = self._lines | "LineKeys" >> beam.FlatMap(_keyed_line).with_outputs(
                STRAY, main="lines"
            )
            owners = self._stored | "LineOwners" >> beam.FlatMap(
                lambda m: [(key, m.request_id) for key in answer_keys(m.request_id)]
            )
            owned = (
                {"lines": keyed.lines, "owners": owners}
                | "JoinLines" >> beam.CoGroupByKey()
                | "OwnLines" >> beam.FlatMap(_owned_lines).with_outputs(STRAY, main="lines")
            )
            groups["lines"] = owned.lines
            strays = [keyed[STRAY], owned[STRAY]]
        if self._exclusions is not None:
            groups["exclusions"] = _by_request("StoredExclusions", self._exclusions)
        compared = (
            groups
            | "JoinPackets" >> beam.CoGroupByKey()
            | "Compare"
            >> beam.FlatMap(_compare, self._lines is not None, self._exclusions is not None)
        )
        return (compared, joined[MISSING], *strays) | "AllRows" >> beam.Flatten()
