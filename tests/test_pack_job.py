"""The job both pipelines share: each stage's dead letters registered once, by name, before
they are written; a late or repeated registration fails while the pipeline is built."""

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as Pipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.job_outputs import DeadLetters


class _Outputs:
    def __init__(self, letters: beam.PCollection) -> None:
        self.dead_letters = letters


def test_every_registered_stage_is_flattened_and_named_stages_come_back() -> None:
    with Pipeline() as p:
        letters = DeadLetters()
        parse = p | "ParseLetters" >> beam.Create(["a", "b"])
        outputs = _Outputs(p | "PackLetters" >> beam.Create(["c"]))
        assert letters.take("Pack", outputs) is outputs
        letters.add("Parse", parse)
        assert letters.of("Parse") == {"Parse": parse}
        assert_that(letters.flatten(), equal_to(["a", "b", "c"]))


def test_a_stage_registered_twice_or_after_the_write_fails_at_construction() -> None:
    p = Pipeline()
    letters = DeadLetters()
    letters.add("Parse", p | "One" >> beam.Create(["a"]))
    with pytest.raises(ValueError, match="Parse registered twice"):
        letters.add("Parse", p | "Two" >> beam.Create(["b"]))
    letters.flatten()
    with pytest.raises(RuntimeError, match="Pack registered after they were written"):
        letters.take("Pack", _Outputs(p | "Three" >> beam.Create(["c"])))
