"""The name a passage opens with, the way an encyclopedia entry names its subject: an
untitled passage links by it as a titled one links by its title (`packer.select`)."""

import re

_SUBJECT = re.compile(
    r"\s*(?:\"([^\"]{2,80})\"|((?:The |A |An )?[A-Z0-9][\w'.&/\u2013-]*"
    r"(?:\s+(?:[A-Z0-9&][\w'.&/\u2013-]*|of|the|de|and|for|in|on|to|a)){0,7}))"
    r"\s*(?:\(|,| is | was | are | were | has | had )"
)


def subject_of(text: str) -> str:
    """The name a passage opens with when it opens as an entry about it: up to eight
    capitalized words (joined by `of`, `the`, ...) before `(`, `,` or `is`/`was`/...

    "Shirley Temple Black (April 23, 1928 ..." gives "Shirley Temple Black";
    "In 1845 Poe ..." or "Although the ..." give nothing (an opening word
    followed by a lower-case word is no name). Rejected: any leading run of
    capitalized words, which made sentence openers ("There", "When") links to
    every passage naming them, and cost ConflictNQ 0.6 points at 256.
    """
    match = _SUBJECT.match(text)
    return (match.group(1) or match.group(2)) if match else ""
