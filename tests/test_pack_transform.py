"""`PackRequests` as a composite, tested the way Beam's examples test theirs.

Requests go in through `beam.Create`, the catalog as a side-input provider (a
`PCollection` of one `CatalogSnapshot`, used as a singleton side input), and
`assert_that` checks each output: prompts, formatted lines, manifests,
exclusions and dead letters. The prompt and manifest must be exactly what
`pack_request` gives for the same inputs: the transform routes, it decides nothing.
"""

import gc
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from packer import PackerRuntime, pack_request
from schemas import BudgetOverride, PackingConfig, Request
from tests.factories import candidate, document, request
from transforms.catalog.side_input import LoadedCatalog, SideInputCatalog, snapshot
from transforms.collector import FULL_COLLECTION_EVERY, make_full_collections_rare
from transforms.pack import PackRequests

CONFIG = PackingConfig()
CATALOG = snapshot(
    [document("d1"), document("d2", allowed_groups=("finance",)), document("d3", deleted=True)]
)
ANSWERED = request(
    candidate("e1", "d1", "Items may be returned within 30 days of delivery."),
    candidate("e2", "d2", "Refunds above 500 EUR need approval."),  # finance only
    candidate("e3", "d3", "The old policy allowed 14 days."),  # deleted
    candidate("e4", "d9", "A passage of a document the catalog does not know."),
)
REFUSED = request(
    candidate("e1", "d1", "Items may be returned within 30 days of delivery."),
    request_id="q2",
    budget=BudgetOverride(input_limit=20),  # not even the instructions fit
)


def expected(req: Request) -> Any:
    """What the pure packer gives for `req` against the same catalog, as the DoFn calls it."""
    loaded = LoadedCatalog.of(CATALOG)
    return pack_request(
        req, loaded.catalog, CONFIG, PackerRuntime.load(), catalog_version=loaded.version(req)
    )


def test_outputs_are_the_packers_routed_to_their_collections() -> None:
    answer = expected(ANSWERED)
    p = test_pipeline.TestPipeline(runner="FnApiRunner")
    catalog = p | "Catalog" >> beam.Create([CATALOG])
    packed = (
        p
        | "Requests" >> beam.Create([ANSWERED, REFUSED])
        | "Pack" >> PackRequests(CONFIG, SideInputCatalog(catalog))
    )
    assert_that(packed.prompts, equal_to([answer.prompt]), label="prompts")
    assert_that(packed.manifests, equal_to([answer.manifest]), label="manifests")
    assert_that(
        packed.exclusions | beam.Map(lambda r: (r.request_id, r.evidence_id, r.reason.value)),
        equal_to(
            [
                ("q1", "e2", "unauthorized"),
                ("q1", "e3", "deleted"),
                ("q1", "e4", "unknown_document"),
            ]
        ),
        label="exclusions",
    )
    assert_that(
        packed.lines | beam.Map(lambda line: (line.request_id, line.tenant_id)),
        equal_to([("q1", "t1")]),
        label="lines",
    )
    assert_that(
        packed.dead_letters
        | beam.Map(lambda d: (d.stage, d.request_id, d.error.startswith("packer refused"))),
        equal_to([("pack", "q2", True)]),
        label="dead_letters",
    )
    result = p.run()
    result.wait_until_finish()

    def counter(name: str) -> int:
        found = result.metrics().query(MetricsFilter().with_name(name))["counters"]
        return sum(c.committed for c in found)

    assert counter("requests_packed") == 1
    assert counter("candidates_in") == 4
    assert counter("evidence_packed") == 1
    assert counter("excluded_unauthorized") == counter("excluded_deleted") == 1


def test_only_allowed_evidence_reaches_the_prompt_and_its_label_map() -> None:
    answer = expected(ANSWERED)
    assert [(e.label, e.evidence_id) for e in answer.prompt.label_map] == [("E1", "e1")]
    user = answer.prompt.messages[-1].content
    assert "30 days" in user
    assert "500 EUR" not in user and "14 days" not in user


def test_requests_without_a_time_are_packed_at_the_given_event_time() -> None:
    at = datetime(2026, 7, 1, tzinfo=UTC)
    timeless = ANSWERED.model_copy(update={"as_of": None, "event_time": None})
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        catalog = p | "Catalog" >> beam.Create([CATALOG])
        packed = (
            p
            | "Requests" >> beam.Create([timeless])
            | "Pack" >> PackRequests(CONFIG, SideInputCatalog(catalog), event_time=at)
        )
        assert_that(
            packed.manifests | beam.Map(lambda m: (m.request_id, m.event_time, m.as_of)),
            equal_to([("q1", at, at)]),
        )


def test_a_packing_worker_makes_full_collections_rare() -> None:
    """The worker's setup raises the oldest generation's threshold (and only that one);
    a process that set a higher one keeps it."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        p = test_pipeline.TestPipeline(runner="FnApiRunner")  # in this process
        catalog = p | "Catalog" >> beam.Create([CATALOG])
        _ = p | beam.Create([ANSWERED]) | PackRequests(CONFIG, SideInputCatalog(catalog))
        p.run().wait_until_finish()
        assert gc.get_threshold() == (700, 10, FULL_COLLECTION_EVERY)
        gc.set_threshold(700, 10, 5 * FULL_COLLECTION_EVERY)
        make_full_collections_rare()
        assert gc.get_threshold() == (700, 10, 5 * FULL_COLLECTION_EVERY)
    finally:
        gc.set_threshold(*before)
