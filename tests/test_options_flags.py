"""Flags are declared once (`pipelines.options.flags.Flag`): the bound a flag declares is
the one every command checks, and no two options classes declare one name."""

import re
from collections import Counter

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.options.flags import Flag, Param, Section, check_numbers, section_flags
from pipelines.options.jobs import BATCH_SECTIONS, JOB_SECTIONS, REPLAY_SECTIONS
from pipelines.options.templates import TEMPLATES, parameter
from pipelines.options.verify import VERIFY_SECTIONS, VERIFY_STREAM_SECTIONS
from tests.strategies import examples

COMMANDS: dict[str, tuple[Section, ...]] = {
    "batch": BATCH_SECTIONS,
    "stream": JOB_SECTIONS["streaming"],
    "replay": REPLAY_SECTIONS,
    "verify": VERIFY_SECTIONS,
    "verify-stream": VERIFY_STREAM_SECTIONS,
}
CLASSES = list(dict.fromkeys(cls for sections in COMMANDS.values() for cls, _ in sections))
BOUNDED = [(cls, f) for cls in CLASSES for f in section_flags((cls, None)) if f.bound]


def test_no_flag_is_declared_twice() -> None:
    names = Counter(f.name for cls in CLASSES for f in section_flags((cls, None)))
    assert [name for name, count in names.items() if count > 1] == []


def test_every_bounded_flag_is_read_by_a_command_with_a_default_in_bound() -> None:
    read = {f.name for sections in COMMANDS.values() for s in sections for f in section_flags(s)}
    assert BOUNDED and {f.name for _, f in BOUNDED} <= read
    for _, flag in BOUNDED:
        assert flag.out_of_bound(flag.default) is None, flag.name


def _value(flag: Flag, number: float) -> str:
    return str(int(number)) if flag.type is int else repr(float(number))


@given(
    st.sampled_from(BOUNDED),
    st.one_of(st.sampled_from([0, -0.0, 1, -1, 0.001]), st.integers(-(10**9), 10**9)),
)
@settings(max_examples=examples(200), deadline=None)
def test_a_number_is_refused_exactly_when_it_breaks_the_declared_bound(
    declared: tuple[type[PipelineOptions], Flag], number: float
) -> None:
    cls, flag = declared
    text = _value(flag, number)
    value = flag.type(text)  # type: ignore[misc]
    allowed = value > 0 or (value == 0 and flag.bound == "not negative")
    try:
        check_numbers(PipelineOptions([f"--{flag.name}={text}"]), ((cls, None),))
    except ValueError as err:
        assert not allowed
        assert str(err).startswith(f"--{flag.name} must be ")
        suggested = str(err).rsplit(f"--{flag.name}=", 1)[1]
        check_numbers(PipelineOptions([f"--{flag.name}={suggested}"]), ((cls, None),))
    else:
        assert allowed


def test_a_choice_without_a_template_label_is_named_when_the_templates_are_written() -> None:
    """A new prompt format (say) without its label fails `make templates`, naming it."""
    flag = Flag(
        "mode", "How.", choices=("a", "b"), template=Param("Mode", choice_labels={"a": "A"})
    )
    with pytest.raises(ValueError, match=re.escape("--mode: no template label for ['b']")):
        parameter(flag, flag.template, TEMPLATES["batch"])  # type: ignore[arg-type]
    labelled = Param("Mode", choice_labels={"a": "A", "b": "B"})
    found = parameter(flag, labelled, TEMPLATES["batch"])
    assert found["regexes"] == ["^(a|b)$"] and found["paramType"] == "ENUM"
    assert [o["label"] for o in found["enumOptions"]] == ["A", "B"]
