"""What names a passage beyond its title, for the links of `packer.select`: the name it
opens with, the way an encyclopedia entry names its subject (an untitled passage
links by it as a titled one by its title); its publisher, the host of its address;
and the days a question names, to match its publication day."""

import re
from collections.abc import Set
from datetime import datetime
from urllib.parse import urlsplit

from packer.question import Question, stem
from packer.records import canonical_words, content_terms, fold_case
from packer.typed_claims import claims_of

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


_JOINING_WORDS = frozenset({"of", "the", "and", "de", "for", "in", "on", "to", "a", "an"})


def short_forms(key: str) -> tuple[str, ...]:
    """An untitled entry's subject key and the shorter forms other texts name it by.

    An entry opens with its subject's full name ("Shirley Temple Black", "Barton
    Lee Hazlewood", "Richard Milhous Nixon"); the passage of the hop before names
    it shortly ("starring Shirley Temple", "written by Lee Hazlewood", "President
    Richard Nixon"). A name of three to five words, none of them joining words
    (not "University of Colorado Boulder"), is also its first two words, its last
    two, and its first and last. hotpotqa-notitle both supporting at
    150/256/512/1024: 20.4/52.4/79.0/95.8 -> 20.6/54.0/81.6/96.0 (gap to the
    oracle at 256: 0.48 -> 0.51); RAMDocs +0.2 at 256 and 1024, ConflictNQ -0.2 at
    150 and 512 (one question each), HotpotQA and MultiHop-RAG unchanged (all
    questions). Rejected: short forms of given titles as well (HotpotQA -3.3 at
    512 on 300 questions: a title is already the name texts use, its parts are
    other entries' names).
    """
    words = key.split()
    if not 3 <= len(words) <= 5 or _JOINING_WORDS.intersection(words):
        return (key,)
    return (key, " ".join(words[:2]), " ".join(words[-2:]), f"{words[0]} {words[-1]}")


def publisher_of(url: str) -> str:
    """The publisher's name in a web address: the host's registered label, lower case
    ("https://www.theverge.com/..." gives "theverge", "https://en.globes.co.il/..."
    gives "globes"); "" for an address that is no http(s) URL."""
    host = urlsplit(url).hostname if url.startswith(("http://", "https://")) else None
    if not host:
        return ""
    labels = [x for x in host.split(".") if x and x != "www"][:-1]  # the TLD goes
    if len(labels) > 1 and len(labels[-1]) <= 3:  # co.uk, com.au
        labels.pop()
    return labels[-1] if labels else ""


def publisher_segments(
    question: Question, publishers: Set[str], stems: bool = True
) -> dict[str, frozenset[str]]:
    """The candidates' publishers the question names, each with the content words (their
    `question.stem` with `stems`, as the passages are searched for them) of the part
    of the question that speaks of it: from the mention before to the next (the
    words between two mentions may speak of either).

    A mention is a run of one to three capitalized words past the question's
    first, joined or as initials ("The Verge" -> "theverge", "Sydney Morning
    Herald" -> "smh"): a lower-case word ("people", "time") names no publisher.
    Mentions with no content word between them ("reported by both TechCrunch and
    The Verge, has spent billions ...") are named jointly: each is said what the
    question says of them together. Before, TechCrunch there was said only "Which
    company, reported by both" and The Verge the claim, so TechCrunch's off-topic
    facts holding "company" outranked its evidence. MultiHop-RAG all evidence at
    150/256/512 (all queries): 59.7/85.5/100 -> 60.6/86.0/100, widened to 50
    candidates 46.9/63.9/81.6 -> 48.0/66.4/82.8; no other set names publishers.
    """
    words = list(question.cased)
    mentions: list[tuple[int, int, str]] = []
    for n in (3, 2, 1):
        for i in range(1, len(words) - n + 1):
            run = [fold_case(w) for w in words[i : i + n]]
            if not all(w[:1].isupper() for w in words[i : i + n]):
                continue
            forms = ["".join(run), "".join(w[0] for w in run) if n > 1 else ""]
            name = next((f for f in forms if f in publishers), None)
            if name and not any(a < i + n and i < b for a, b, _ in mentions):
                mentions.append((i, i + n, name))
    groups = _joint(sorted(mentions), words)
    terms: dict[str, set[str]] = {}
    for j, group in enumerate(groups):
        low = groups[j - 1][-1][1] if j else 0
        high = groups[j + 1][0][0] if j + 1 < len(groups) else len(words)
        said = words[low:high]
        for start, end, _ in reversed(group):  # the mentions themselves say nothing
            del said[start - low : end - low]
        found = content_terms(canonical_words(" ".join(said)))
        found = {stem(t) for t in found} if stems else found
        for _, _, name in group:
            terms.setdefault(name, set()).update(found)
    return {name: frozenset(t) for name, t in terms.items()}


def _joint(
    mentions: list[tuple[int, int, str]], words: list[str]
) -> list[list[tuple[int, int, str]]]:
    """Mentions (in order) grouped where no content word stands between two of them."""
    groups: list[list[tuple[int, int, str]]] = []
    for mention in mentions:
        between = words[groups[-1][-1][1] : mention[0]] if groups else []
        if groups and not content_terms(canonical_words(" ".join(between))):
            groups[-1].append(mention)
        else:
            groups.append([mention])
    return groups


_ISO_DAY = re.compile(r"\b(\d{4}) (\d{1,2}) (\d{1,2})\b")


def named_days(question: Question) -> frozenset[tuple[int | None, int, int]]:
    """The days a question names to the day: (year or None, month, day), from
    "October 1st" or "November 24, 2023" (`typed_claims`) and ISO dates."""
    text = question.joined
    days = {
        (d.year, d.month, d.day)
        for claims in claims_of(text)
        for d in claims.dates
        if d.month is not None and d.day is not None
    }
    for year, month, day in _ISO_DAY.findall(text):
        if 1 <= int(month) <= 12 and 1 <= int(day) <= 31:
            days.add((int(year), int(month), int(day)))
    return frozenset(days)


def on_named_day(when: datetime | None, days: frozenset[tuple[int | None, int, int]]) -> bool:
    """Whether `when` falls on one of the named days (a day named without a year
    matches it in any year)."""
    if when is None or not days:
        return False
    return (when.year, when.month, when.day) in days or (None, when.month, when.day) in days


_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def title_key(title: str) -> str:
    """The normalized title another text must mention to link to its record.

    A trailing parenthetical qualifier ("Kiss and Tell (1945 film)") is left
    out: texts name the entity, not its disambiguation. Titles recur across
    requests: a worker's `PackerRuntime` memoizes the keys.
    """
    if title.endswith(")"):
        title = _QUALIFIER.sub("", title)
    key = " ".join(canonical_words(title))
    return key if len(key) >= 4 else ""
