"""The capitalised names an answer sentence states, and whether its sources write them: the
reading behind `names_supported` (`packer.verification.checks`).

A name is a capitalised word that does not open the sentence (or a clause after a colon,
a bracket or a quote mark), nor is a function word, a title or honorific ("President",
"Honourable", "Dr"), a month or a day, a common noun often capitalised ("Internet"), a
noun referring back alone after "the" ("the Act"), nor a noun numbering a part before its
number ("Season 20", "Part 1"); words inside quotation marks are the quote check's. A source
writes a name when it has the word in any case (or as a part of a hyphenated word), without
a possessive; or a word sharing its first letters with it but for an ending ("Canadian" /
"Canada", "Italian" / "Italy": a stem of four letters or more, differing by three letters
at most); or the demonym of a country it names ("French" / "France", "British" / "UK");
or, for a run of names ("United States"),
the acronym of their initials ("US", "U.S.", "U. S."), and for an acronym ("NASA"), a
run with those initials. A run of names is reported whole ("Frank Epperson") when no
word of it, its sentence-opening word included, is written: a source naming "Rebecca"
or "Bunch" has named "Rebecca Bunch" for this check (rejected: every word written, which
on the real answers' tuning split flagged 19 of 364 supported claims, most of them a
first name or a qualifier the source left out).

German text is left out (a sentence with two or more German function words): it
capitalises every noun, which would all read as names. Rejected: a named-entity model
(a dependency and a download for a check that must run anywhere, and its errors are
not a rule a reader can follow); requiring the whole run verbatim (a source writes
"Musk" where the answer writes "Elon Musk", the alias the packet gives).
"""

import re
from dataclasses import dataclass

from packer.verification.answer_sentences import strip_citations
from packer.verification.figures import _NOT_NAMES
from packer.verification.written_dates import MONTHS

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+|-[^\W\d_]+)*")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")
_OPENERS = frozenset(".!?:;•*-–—()[]\"“‘'\n")
"""What a word opening a sentence or a clause comes after: nothing, or an end mark, a
colon, a bullet, a dash, a bracket (a list item's "(3)" or "2)") or a quote mark."""
_DOTTED = re.compile(r"(?<!\w)(?:[A-Z]\.(?: (?=[A-Z]\.))?){2,}")
"""An acronym written with points, spaced or not ("U.S.", "U. S."): a source writing it
writes "US"."""
_ACRONYM = re.compile(r"\b[A-Z]{2,}\b")
"""An acronym in capitals ("US", "UK"): kept apart from the folded words, where "US" and the
pronoun "us" are one."""
_NOT_NAME_WORDS = frozenset(
    """i i'm i've i'd i'll however according overall yes also additionally furthermore
    moreover therefore thus meanwhile finally firstly secondly lastly note please
    mr mrs ms miss dr prof professor sir dame lord lady saint st president vice prime
    minister king queen prince princess pope general gen captain capt colonel col
    lieutenant senator sen governor gov mayor judge justice chief sergeant officer
    honorable honourable hon deputy rev reverend father bishop archbishop cardinal rabbi
    ambassador secretary chancellor commissioner coach
    monday tuesday wednesday thursday friday saturday sunday today
    north south east west northern southern eastern western internet web""".split()  # noqa: SIM905
)
"""Capitalised words that are not names: sentence adverbs, the pronoun "I", titles and
honorifics, days, compass points and common nouns often capitalised ("the Internet", "the
Web") (beside `_NOT_NAMES`, the function words)."""
_REFERRING = frozenset(
    """act bill law treaty constitution court company corporation firm government council
    committee agency department ministry commission board authority""".split()  # noqa: SIM905
)
"""Nouns that, capitalised alone after "the", refer back to a body or a document ("the Act",
"the Court", "the Company"): the name it stands for, not a new one."""
_THE_BEFORE = re.compile(r"\bthe\s+$", re.IGNORECASE)
_NUMBERING = frozenset(
    """season series part chapter episode volume vol book article section act scene round
    stage phase level game week day track disc issue page figure table step grade class
    type category division tier edition version verse""".split()  # noqa: SIM905
)
"""Nouns that number the parts of something ("Season 20", "Part 1", "Chapter 3"): before
a number they are a label written in capitals, not a name a source must write."""
_BEFORE_NUMBER = re.compile(r"\s+\d")
_DEMONYMS = {
    "american": "us",
    "french": "france",
    "spanish": "spain",
    "dutch": "netherlands",
    "swiss": "switzerland",
    "welsh": "wales",
    "irish": "ireland",
    "danish": "denmark",
    "polish": "poland",
    "finnish": "finland",
    "british": "uk",
    "filipino": "philippines",
    "thai": "thailand",
    "icelandic": "iceland",
    "portuguese": "portugal",
    "belgian": "belgium",
    "scottish": "scotland",
}
"""Adjectival forms whose country does not share their first four letters, or is written as
its acronym ("British" / "UK", "American" / "US"; "Britain" and "America" share them)."""
_COUNTRIES = {country: demonym for demonym, country in _DEMONYMS.items()}
_NOT = _NOT_NAMES | _NOT_NAME_WORDS
_INNER_CAPITAL = re.compile(r"(?<=[^\w])[^\W\d_a-z]")
"""A capital (or a letter of a script without case) after the sentence's first character."""
_GERMAN_WORD = re.compile(
    r"\b(?:der|die|das|und|ist|nicht|ein|eine|den|dem|des|mit|für|auf|im|zum|zur|wurde|sind)\b"
)
_CONNECTORS = frozenset({"of", "for", "the", "de", "du", "von", "van"})
"""Lower-case words inside a run of names ("Bank of America"), left out of its acronym;
not "and", which joins two names ("Musk and Bezos")."""


@dataclass(frozen=True)
class SourceNames:
    """What a source writes that a name is looked up by: its folded words, their stems
    (`_stems`), and the acronyms of its runs of capitalised words."""

    words: frozenset[str]
    stems: dict[str, int]
    acronyms: frozenset[str]

    def writes(self, word: str) -> bool:
        """Whether the source writes `word` (folded) or a form of it (the module's rules)."""
        kin = {_DEMONYMS.get(word), _COUNTRIES.get(word)}
        if word in self.words or self.words & kin - {"us"} or self.acronyms & kin:
            return True
        for k in range(len(word), 3, -1):
            shortest = self.stems.get(word[:k])
            if shortest is not None and k >= min(len(word), shortest) - 3:
                return True
        return False


def _folded(word: str) -> str:
    return word.casefold().removesuffix("'s").removesuffix("’s").replace("’", "'")


def _stems(words: frozenset[str]) -> dict[str, int]:
    """Each first-letters stem of four letters or more of `words`, with the length of the
    shortest word it starts."""
    stems: dict[str, int] = {}
    for word in words:
        for k in range(4, len(word) + 1):
            if stems.get(word[:k], 10**6) > len(word):
                stems[word[:k]] = len(word)
    return stems


_UPPER = "A-ZÀ-ÖØ-ÞĀ-ŽΑ-ΩА-Я"
"""Capitals of the Latin, Greek and Cyrillic scripts a name is read in."""
_CAPITALISED = rf"[{_UPPER}][^\W_]*(?:['’-][^\W\d_]+)*"


def _run_pattern(connectors: frozenset[str]) -> re.Pattern[str]:
    joins = "|".join(sorted(connectors))
    return re.compile(
        rf"(?<![\w'’-]){_CAPITALISED}(?: (?:(?:{joins}) )?{_CAPITALISED})*(?![\w'’-])"
    )


_CAPITAL_WORD = re.compile(rf"(?<![^\W\d_])[{_UPPER}][^\W\d_]*(?:['’-][^\W\d_]+)*")
"""A capitalised word, as `_WORD` reads it ("O’Neil’s", "Ex-Girlfriend")."""
_RUN = _run_pattern(_CONNECTORS)
_SOURCE_RUN = _run_pattern(_CONNECTORS | {"and"})  # "National Aeronautics and Space ...": NASA
"""Runs of capitalised words, joined by a space (and by `_CONNECTORS` inside a run); a
source's runs also by "and", for the acronyms it spells out."""


def _runs(text: str, pattern: re.Pattern[str] = _RUN) -> list[list[re.Match[str]]]:
    """Runs of capitalised words (`_RUN`), each as the matches of its capitalised words."""
    return [
        [w for w in _WORD.finditer(text, run.start(), run.end()) if w[0][0].isupper()]
        for run in pattern.finditer(text)
    ]


def _initials(words: list[str]) -> str:
    """The acronym of a run's name words ("The United States": "us")."""
    named = [w for w in words if _folded(w) not in _NOT]
    return "".join(w[0] for w in named).casefold() if len(named) > 1 else ""


def source_names(text: str) -> SourceNames:
    """A source's words (each part of a hyphenated one too: "Senegalese-American" writes
    "American"), stems and acronyms, for `SourceNames.writes`."""
    written = {_folded(w) for w in set(_WORD.findall(text))}
    words = frozenset(written | {p for w in written if "-" in w for p in w.split("-")})
    runs = _runs(text, _SOURCE_RUN)
    acronyms = {_initials([m[0] for m in run]) for run in runs} - {""}
    acronyms.update(re.sub(r"[. ]", "", m[0]).casefold() for m in _DOTTED.finditer(text))
    acronyms.update(w.casefold() for w in _ACRONYM.findall(text))
    return SourceNames(words, _stems(words), frozenset(acronyms))


def _is_name(match: re.Match[str], text: str) -> bool:
    word = match[0]
    if len(word) < 2 or word in MONTHS or _folded(word) in _NOT:
        return False
    if _folded(word) in _NUMBERING and _BEFORE_NUMBER.match(text, match.end()):
        return False
    at = match.start() - 1
    while at >= 0 and text[at] in " \t":
        at -= 1
    return at >= 0 and text[at] not in _OPENERS


def _refers_back(match: re.Match[str], text: str) -> bool:
    """Whether a lone capitalised word is a `_REFERRING` noun after "the" ("the Act")."""
    return _folded(match[0]) in _REFERRING and bool(_THE_BEFORE.search(text, 0, match.start()))


def sentence_names(sentence: str) -> list[tuple[str, tuple[str, ...]]]:
    """The names a sentence states, as (the run as written, its words a source may write,
    folded); none in German text. A run's opening word is no name by itself but is one of
    the run's words: "Rebecca Bunch" opening a sentence is named by a source writing
    "Rebecca"."""
    text = strip_citations(sentence)
    if not _INNER_CAPITAL.search(text):
        return []  # the common case: no capital but the first
    if '"' in text or "“" in text:
        text = _QUOTED.sub(lambda m: " " * len(m[0]), text)
    if len(_GERMAN_WORD.findall(text.casefold())) >= 2:
        return []
    found = []
    for run in _runs(text):
        named = [m for m in run if _is_name(m, text)]
        if len(named) == 1 and _refers_back(named[0], text):
            continue
        if named:
            words = [_folded(m[0]) for m in run if m in named or _folded(m[0]) not in _NOT]
            found.append((text[named[0].start() : run[-1].end()], tuple(words)))
    return found


def missing_names(sentence: str, sources: list[SourceNames]) -> list[str]:
    """The runs of names of `sentence` of which no source writes a word (nor their initials
    as an acronym); an acronym a source spells out is written."""
    unwritten = {_folded(w) for w in _CAPITAL_WORD.findall(sentence) if len(w) > 1}
    for source in sources:
        unwritten -= source.words
    if not unwritten:
        return []  # the common case: every capitalised word is written, so is every run
    missing = []
    for run, names in sentence_names(sentence):
        initials = _initials([w for w in run.split() if w[0].isupper()]) if " " in run else ""
        if initials and any(initials in s.acronyms or initials in s.words for s in sources):
            continue
        if not any(_written(name, sources) for name in names):
            missing.append(run)
    return missing


def _written(name: str, sources: list[SourceNames]) -> bool:
    """A name some source writes, as a word, an acronym, or a part ("Norway-born")."""
    if any(s.writes(name) or name in s.acronyms for s in sources):
        return True
    parts = name.split("-")
    return len(parts) > 1 and any(s.writes(p) for s in sources for p in parts if p)
