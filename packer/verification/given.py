"""What the model was given for one request (`GivenPacket`), with the figures and names of
each block and of the rest of the prompt read once per packet, as `packer.verification.checks`
looks them up."""

from dataclasses import dataclass, field

from packer.verification.claims import AnswerSentence
from packer.verification.figures import TextFigures, text_figures
from packer.verification.names import SourceNames, source_names

GIVEN = "\0given"
"""The key of the given text's facts among a packet's block facts (no label has a NUL)."""


@dataclass(frozen=True)
class GivenPacket:
    """What the model was given for one request, as verification needs it.

    `blocks` maps each label to its block text (unescaped); `given` is what
    else the prompt said (the question and the notes: a figure restated from
    it needs no evidence); `own_ids` are the
    ids of this packet's evidence (with what was folded into it) and documents;
    `excluded` maps the evidence id of each gate-excluded candidate to its text
    (empty when the request file was not given: the check is then skipped).
    """

    request_id: str
    blocks: dict[str, str]
    given: str = ""
    conflicts: tuple[tuple[str, ...], ...] = ()
    uncovered: tuple[str, ...] = ()
    own_ids: frozenset[str] = frozenset()
    excluded: dict[str, str] | None = None
    _facts: dict[str, TextFigures] = field(default_factory=dict, compare=False, repr=False)
    _names: dict[str, SourceNames] = field(default_factory=dict, compare=False, repr=False)
    sentences: dict[str, AnswerSentence] = field(default_factory=dict, compare=False, repr=False)
    """The answer sentences read against this packet (`parse_answer`'s memo): several answers
    to one packet repeat sentences."""

    def facts(self, label: str) -> TextFigures:
        """The block's figures and dates, computed once per block of this packet."""
        found = self._facts.get(label)
        if found is None:
            found = self._facts[label] = text_figures(self.blocks[label])
        return found

    def names(self, label: str) -> SourceNames:
        """What a block (or the given text, `GIVEN`) writes that names are looked up by."""
        found = self._names.get(label)
        if found is None:
            text = self.given if label == GIVEN else self.blocks[label]
            found = self._names[label] = source_names(text)
        return found

    def given_facts(self) -> TextFigures:
        """The figures and dates of the prompt outside the evidence (`given`), computed once."""
        found = self._facts.get(GIVEN)
        if found is None:
            found = self._facts[GIVEN] = text_figures(self.given)
        return found
