"""How an answer says the evidence does not hold something, and when a whole answer abstains.

`packer.verification.checks` reads these phrasings in three checks: a sentence saying the
evidence lacks something needs no citation (`factual_sentences_cited`, when it also names
the sources), an uncovered facet must be said to be unavailable
(`uncovered_facets_declared`), and a packet without evidence must get an abstention
(`abstention`; `cites_evidence` accepts one too).
"""

import re

from packer.verification.claims import AnswerSentence

UNAVAILABLE_PHRASES = (
    r"\b(?:no|not\s+any|not\s+enough|without|lack(?:s|ing)?(?:\s+any)?)\s+(?:\w+\s+){0,2}?"
    r"(?:evidence|information|sources?|records?|data|details?|mentions?|references?"
    r"|indications?|figures?|facts?)\b",
    r"\b(?:not\s+possible|impossible)\s+to\s+(?:determine|tell|say|know|find|answer|confirm"
    r"|establish)\b",
    r"(?<![\w/])N/A(?![\w/])",
    r"(?:\bnot|n't)\s+(?:(?:be|been|explicitly|directly|clearly|specifically)\s+)?(?:available"
    r"|mentioned|stated|specified|provided|covered|given|found|known|addressed|included|listed"
    r"|discussed|reported|disclosed|described|documented|present|contained|indicated|clear"
    r"|identified|named|recorded|in\s+the\s+(?:evidence|sources?|records?|documents?))",
    r"\b(?:unavailable|unknown|unclear|unspecified|unstated|unreported|undisclosed"
    r"|unmentioned|insufficient)\b",
    r"\b(?:do|does|did)(?:\s+not|n't)\s+(?:\w+ly\s+)?(?:say|state|mention|contain|cover"
    r"|include|specify|address|provide|give|tell|answer|indicate|describe|explain|discuss"
    r"|detail|list|show|report|reveal|disclose|offer|touch|appear|seem|have|hold|support"
    r"|establish|confirm|identify|clarify|name|know|speak|refer)",
    r"\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|was\s+unable\s+to"
    r"|were\s+unable\s+to)\s+(?:be\s+)?(?:determine|determined|answer|answered|say|tell"
    r"|find|found|locate|located|confirm|confirmed|identify|identified|verify|verified"
    r"|establish|established|see|infer|inferred)",
    r"\b(?:says?|said|tells?|contains?|mentions?|states?|reports?|offers?|gives?|provides?)"
    r"\s+nothing\b",
    r"\b(?:found|finds?|see|there\s+is|there's|there\s+was)\s+(?:nothing|no\s+mention)"
    r"\s+(?:about|on|regarding|concerning|of|in|further|more|else|relevant|specific)\b",
    r"\bnothing\s+(?:about|on|regarding|concerning|is\s+said|was\s+found|in\s+the)\b",
    r"\b(?:silent|mute)\s+(?:on|about|regarding|as\s+to|concerning)\b",
    r"\bnone\s+of\s+the\s+(?:sources|documents|evidence|passages|records|blocks|texts"
    r"|articles|excerpts|results)\b",
    r"\b(?:beyond|outside)\s+(?:the\s+)?scope\b",
)
"""How answers say the evidence does not hold something (an abstention, an uncovered
facet): "no information on X", "X is not mentioned", "the documents do not say",
"I could not find anything about X", "there is nothing about X", "the documents
are silent on X", "none of the sources cover X", "X is unknown", "beyond the
scope". A negated claim about the world ("the bridge was not built", "she has nothing
to hide") is not one; a claim that happens to use one of these phrasings ("date of death
unknown") reads as one: telling those apart needs a model. Tested phrase by phrase in
tests/verification/test_verify_reading.py."""
UNAVAILABLE = re.compile("|".join(UNAVAILABLE_PHRASES), re.IGNORECASE)
SOURCES = re.compile(
    r"\b(?:sources?|evidence|records?|documents?|passages?|context|information|data|labels?"
    r"|articles?|texts?|excerpts?|materials?|I|we)\b",
    re.IGNORECASE,
)
"""What an answer names when it says the evidence lacks something ("the sources do not ...",
"I could not find ...")."""


def abstains(sentences: list[AnswerSentence]) -> bool:
    """An answer that abstains: at least half its sentences say the evidence lacks something,
    and no other sentence states a figure, date or quotation ("I'm sorry. The documents do
    not say." abstains; "It rose 4%. The sources do not cover 2025." does not)."""
    lacking = [bool(UNAVAILABLE.search(s.text)) for s in sentences]
    stated = any(s.facts for s, lacks in zip(sentences, lacking, strict=True) if not lacks)
    return any(lacking) and not stated and 2 * sum(lacking) >= len(sentences)
