"""`PackerRuntime`: one worker's tokenizer and memos, held in one explicit object.

Retrieval returns the same passages to many questions, so packing remembers
what it computed per distinct text: token counts (in the `TokenCounter`),
the facts of a text, its sentences, statements and negated statements, its typed
claims and names, the link key of a title; and what depends on the config alone: the MinHash
LSH bands and permutations (`packer.sketch`). Those memos
live here, as instance caches, and nowhere else in `packer/`:

- a cold start is a new runtime, and a second worker (a test's, a
  benchmark's) really shares nothing with the first;
- the caller decides how threads share one: the pack transform acquires a
  worker's runtime through Beam's `Shared`, as `RunInference` shares its
  model, so a worker's DoFn threads count a recurring passage once.

Every memo is a bounded `functools.lru_cache` built per instance, which is
safe across threads and costs no lock in Python code. Rejected: module-level
`lru_cache`s cleared by a hand-kept list (process state that a maintainer has
to know about, and that silently outlived the "fresh" worker of a test), and
passing plain dicts down the call chain (unbounded, and not thread-safe
under eviction).
"""

from collections.abc import Callable
from functools import lru_cache, partial

from packer.layout import PromptLayout
from packer.records import TextFacts, folded_form, text_facts
from packer.sketch import Permutations, lsh_bands, permutations
from packer.statements import Statement, Statements, negated_statements_of, statements_of
from packer.subjects import title_key
from packer.tokens import TokenCounter
from packer.typed_claims import SentenceClaims, claims_of, name_spans
from packer.units import Sentence, sentences_of

TEXT_FACTS_ENTRIES = 32_768
SENTENCES_ENTRIES = 8_192
TITLE_ENTRIES = 65_536
TYPED_CLAIMS_ENTRIES = 8_192
STATEMENTS_ENTRIES = 8_192
CONFIG_ENTRIES = 16
"""Memos keyed by config values alone (a worker packs with one config, a test with a few)."""


class Memos:
    """What packing computes once per distinct text, bounded (LRU) and thread-safe."""

    def __init__(self) -> None:
        self.text_facts: Callable[[str], TextFacts] = lru_cache(TEXT_FACTS_ENTRIES)(text_facts)
        self.sentences: Callable[[str], tuple[Sentence, ...]] = lru_cache(SENTENCES_ENTRIES)(
            sentences_of
        )
        self.title_key: Callable[[str], str] = lru_cache(TITLE_ENTRIES)(title_key)
        self.typed_claims: Callable[[str], tuple[SentenceClaims, ...]] = lru_cache(
            TYPED_CLAIMS_ENTRIES
        )(claims_of)
        self.names: Callable[[str], list[tuple[tuple[str, ...], int]]] = lru_cache(
            TYPED_CLAIMS_ENTRIES
        )(self._names)
        self.statements: Callable[[str], Statements] = lru_cache(STATEMENTS_ENTRIES)(
            self._statements
        )
        self.negated_statements: Callable[[str], tuple[Statement, ...]] = lru_cache(
            STATEMENTS_ENTRIES
        )(negated_statements_of)
        self.lsh_bands: Callable[[float, int], tuple[int, int]] = lru_cache(CONFIG_ENTRIES)(
            lsh_bands
        )
        self.permutations: Callable[[int], Permutations] = lru_cache(CONFIG_ENTRIES)(permutations)

    def _names(self, text: str) -> list[tuple[tuple[str, ...], int]]:
        """The names of a text read as one run of words (`typed_claims.name_spans` over the
        whole text, in C, not sentence by sentence as its typed claims do: 19 against 100
        us an encyclopedia paragraph, 4 against 18 a news fact). A run may then span a
        sentence's end ("in New York. Unlike ..."), and only the text's first word
        counts as a sentence's opening."""
        return name_spans(folded_form(text, fold=False), self.text_facts(text).canonical)

    def _statements(self, text: str) -> Statements:
        return statements_of(text, self.sentences(text))


class PackerRuntime:
    """The tokenizer and memos one worker packs with; construct one per worker (or per test)."""

    def __init__(self, tokens: TokenCounter) -> None:
        self.tokens = tokens
        self.memos = Memos()
        self.layouts: Callable[..., PromptLayout] = lru_cache(CONFIG_ENTRIES)(
            partial(PromptLayout, tokens)
        )
        """The prompt layout of a config's block attributes, title words, framing and
        compactness (`packer.pack.layout_of`), one per worker: it keeps the counts of its
        fixed parts (`layout.LAYOUT_COUNTS`)."""

    @classmethod
    def load(
        cls, tokenizer: str = "cl100k_base", tokenizer_file: str | None = None
    ) -> "PackerRuntime":
        """A runtime over a freshly loaded tokenizer (see `TokenCounter.load`)."""
        return cls(TokenCounter.load(tokenizer, tokenizer_file))
