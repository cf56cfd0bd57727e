"""The packing config: every knob that changes a prompt, hashed into `config_hash`."""

import hashlib
import json
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from schemas._types import INT64_MAX, Items
from schemas.prompt_formats import FORMAT_NAMES, FORMATS, PromptFormat

OrderPolicy = Literal["relevance", "edges", "best_last", "chronological"]
FormatName = Literal[FORMAT_NAMES]
"""Our prompt messages, or the input line of one provider's batch API (`schemas.prompt_formats`)."""
BlockAttribute = Literal["title", "document", "revision", "section", "source", "effective"]
DedupLevel = Literal["exact", "overlap", "adjacent", "near", "reprint"]
ConflictRule = Literal["copy", "polarity", "amount", "slot", "name"]


class _Config(BaseModel):
    """Settings are taken only as their type, as request fields are (`schemas.request`):
    YAML's `yes` is not the input limit 1, `"1000"` not a number; floats are finite
    (a NaN weight would order candidates at random) and integers fit int64 (the
    manifest columns they are written to)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class UtilityWeights(_Config):
    """Weights of the utility function that ranks candidates after facet coverage.

    utility = relevance*r + new_facet*f + new_question_terms*q + linked*l + new_source*s
              + authority*a + recency*c - redundancy*d - token_cost*(tokens / evidence budget)
              + named_source*n + named_source_terms*t + shared_name*h
    `linked` is 1 when the candidate's title is named by the question or by
    evidence already packed (the next hop of a multi-part question). `n` is 1
    when the question names the candidate's publisher (the host of its
    `source_url`; on a day the question names, if it names days), 1/2 once
    that publisher is packed; `t` is then the share of the question's terms
    said of that publisher that the candidate holds (`packer.subjects`); `h` is 1
    when the candidate holds a name that candidates of two publishers the
    question names hold (what their reports have in common: `packer.sources`).
    Candidates are then filled by utility per token (ARCHITECTURE.md, Packing rules),
    a block's tokens counted with `block_overhead` more.

    `block_overhead`: every block costs the model a fixed share of attention
    and the prompt a label beyond its text, so a two-sentence passage of little
    use is not nearly free. Per bare token the greedy fill let short
    off-topic passages (a 25-token fact of a named publisher, a one-line
    distractor) crowd out a gold passage three times their length. Measured on
    the full visible sets at 150/256/512/1024 against 0 (points of the
    primary metric): HotpotQA +1.0/+0.4/+0.2/0, hotpotqa-notitle
    +0.6/+0.2/-0.2/-0.2, ConflictNQ +2.0/+2.4/+0.2/0, RAMDocs 0/0/0/+0.2,
    MultiHop-RAG -0.2/0/0/0. At 8 tokens about half of that; at 22 and 30,
    MultiHop-RAG -1.6 and -1.4 at 150. Rejected beside it (same sets): links
    from a packed passage to every candidate naming its title (HotpotQA -3.6
    at 256, ConflictNQ -3.8 at 256); a subject of three words or more linked
    by its first two ("Shirley Temple Black" by "Shirley Temple": HotpotQA
    -3.2 at 256); a second selection run seeded with each of the three best
    candidates left out, the run of most total utility kept (HotpotQA -6.2 at
    256, RAMDocs -2.4 at 150).

    `new_source` was 0.25: a bonus every unpacked document gets, so per token
    it favours short passages. Switched off (ablation `zero-new_source`) it
    gains on four of five sets (ConflictNQ both sides kept +4.9/+10.4 at
    150/256) but loses 1.8 on hotpotqa-notitle at 512; at 0.15 every cell of
    every set stays within 0.4 points of 0.25 and ConflictNQ gains 2.0/4.2/0.6
    at 150/256/512 (0.1: notitle -1.2 at 1,024).
    """

    relevance: float = 1.0
    new_facet: float = 0.5
    new_question_terms: float = 1.0
    linked: float = 1.0
    new_source: float = 0.15
    authority: float = 0.2
    recency: float = 0.1
    redundancy: float = 0.25
    token_cost: float = 0.1
    named_source: float = 2.0
    named_source_terms: float = 8.0
    shared_name: float = 1.0
    block_overhead: float = 15.0


class DedupConfig(_Config):
    """Dedup levels, near-duplicate and conflict detection settings (ARCHITECTURE.md,
    Packing rules).

    `levels` switches dedup levels on one by one (ablations): `exact` (same
    canonical text), `overlap` (overlapping spans of one revision), `adjacent`
    (contiguous spans of one revision, section and effective date), `near`
    (MinHash within one revision), `reprint` (near-identical copies across
    documents that differ in no fact). `reprint_similarity` and
    `conflict_similarity` are the shares of canonical words two passages must
    share, in order, to be a reprint or, when a fact differs, a conflict.
    `conflict_rules` switches conflict detection on rule by rule: `copy` (a
    copy of one report with a fact or stance changed), `polarity` (two documents
    making one statement, one negated: `packer.polarity`), `amount` (two documents
    giving the measured amount the question asks for differently: `packer.amounts`),
    `slot` (two documents answering the question's number or date slot
    differently), `name` (the same for a name: "who", "where");
    `packer.slot_conflicts`. `copy`, `polarity` and `amount` are on by default.
    Passages taking opposite sides of a yes/no question are no conflict rule but
    an answer to cover (`enable_sides_first`): as a conflict, read from negation
    words alone, they paired ConflictNQ fakes taking one side in other words
    (precision 1.0 -> 0.43). `slot` and `name` are off: measured at
    2,048 tokens (`benchmarks.meaning`) they cut RAMDocs pair precision from
    0.71 to 0.36 for recall 0.45 -> 0.52 and reach ConflictNQ precision 0.55
    at recall 0.043 (figures and caps in `packer.slot_conflicts`).
    """

    levels: Items[DedupLevel] = ("exact", "overlap", "adjacent", "near", "reprint")
    near_duplicate_threshold: float = Field(default=0.8, gt=0.0, le=1.0)
    minhash_permutations: int = Field(default=64, ge=16, le=512)
    shingle_words: int = Field(default=3, ge=1, le=10)
    reprint_similarity: float = Field(default=0.8, gt=0.0, le=1.0)
    conflict_similarity: float = Field(default=0.65, gt=0.0, le=1.0)
    conflict_rules: Items[ConflictRule] = ("copy", "polarity", "amount")


ResolutionPolicy = Literal["keep_both", "authority"]
Applicability = Literal["jurisdiction", "product_version"]


class ResolutionConfig(_Config):
    """How a flagged conflict is resolved (seed 002), in this order, per conflict group:

    1. `applicability`: when the request names a jurisdiction (product version)
       and the catalog says where (to which versions) the members apply, the
       members that do not apply are excluded as `not_applicable`, if one that
       applies remains;
    2. `policy: authority`: the members whose catalog `source` ranks highest in
       `authority` (most authoritative first; an unranked source ranks last)
       stay, the others are excluded as `lower_authority`;
    3. what is left, two or more, is kept and flagged (`keep_both`, the
       default policy): the prompt tells the model to state the conflict.

    Every resolution, with the rule that made it, is a row of the manifest's
    `resolutions`; nothing is dropped without one. Part of the config hash, so a
    manifest names the rule set it was packed under.
    """

    policy: ResolutionPolicy = "keep_both"
    authority: Items[str] = ()
    applicability: Items[Applicability] = ("jurisdiction", "product_version")

    @model_validator(mode="after")
    def _ranked(self) -> "ResolutionConfig":
        if self.policy == "authority" and not self.authority:
            raise ValueError("policy authority needs a ranking: authority: [most, ..., least]")
        if len(set(self.authority)) < len(self.authority):
            raise ValueError("authority ranking names a source twice")
        return self


FormatModels = create_model(
    "FormatModels",
    __base__=_Config,
    __doc__="""The model each provider format asks for, where it differs from `model`.

    One run writes one format, but one config serves several (the flag
    `--prompt_format` picks): without a model per format, the model of one
    provider would be sent to another, which would refuse every line. A
    model is refused when the provider of its format would refuse every line
    (`PromptFormat.models`).
    """,
    **{name: (str | None, None) for name, f in FORMATS.items() if f.provider},
)


class PackingConfig(_Config):
    """How one request is packed. Every setting and its default: docs/config.md."""

    model: str = "gpt-4-turbo"
    models: FormatModels = FormatModels()
    tokenizer: str = "cl100k_base"
    tokenizer_file: str | None = None
    input_limit: int = Field(default=8192, gt=0, le=INT64_MAX)
    reserved_answer: int = Field(default=1024, ge=0, le=INT64_MAX)
    reasoning_headroom: int = Field(default=0, ge=0, le=INT64_MAX)
    """Output tokens a reasoning model (OpenAI o-series, Claude or Gemini thinking) spends
    on hidden reasoning before its answer: added to the answer cap of every prompt line
    (`max_completion_tokens`, `max_tokens`, ...) above `reserved_answer`, and kept out
    of the evidence budget like it, since both come out of the model's context. Without
    it the cap is `reserved_answer` alone, which the reasoning also has to fit in (an
    answer cut off: `truncated`). Rejected: raising `reserved_answer` (it says what the
    answer needs, and the report shows it as such)."""
    safety_margin: int = Field(default=32, ge=0, le=INT64_MAX)
    max_evidence_tokens: int | None = Field(default=None, gt=0, le=INT64_MAX)
    order_policy: OrderPolicy = "relevance"
    prompt_format: FormatName = "messages"
    per_document_cap: int = Field(default=3, ge=1, le=INT64_MAX)
    block_attributes: Items[BlockAttribute] = ()
    title_words: int = Field(default=6, ge=1, le=256)
    compact_framing_below: int = Field(default=512, ge=0, le=INT64_MAX)
    """Evidence budgets below this many tokens get the compact framing
    (`packer.layout`): one-line blocks with no closing label, one conflict note for
    every group. 0: never."""
    weights: UtilityWeights = UtilityWeights()
    dedup: DedupConfig = DedupConfig()
    resolution: ResolutionConfig = ResolutionConfig()
    enable_dedup: bool = True
    enable_facet_coverage: bool = True
    enable_document_cap: bool = True
    enable_sentence_units: bool = True
    enable_subject_links: bool = True
    enable_source_links: bool = True
    enable_claim_units: bool = True
    enable_conflict_sides: bool = True
    enable_calibrated_relevance: bool = True
    enable_term_stems: bool = True
    enable_pairs_first: bool = True
    enable_sides_first: bool = True
    enable_answers_first: bool = False
    enable_full_names: bool = True

    @model_validator(mode="after")
    def _fits(self) -> "PackingConfig":
        if self.output_allowance + self.safety_margin >= self.input_limit:
            raise ValueError(
                f"reserved_answer ({self.reserved_answer}) + reasoning_headroom "
                f"({self.reasoning_headroom}) + safety_margin ({self.safety_margin}) must be "
                f"below input_limit ({self.input_limit})"
            )
        for fmt, model in self.models:  # each named one, whichever format this run writes
            if model is not None and (misfit := FORMATS[fmt].misfit(model)) is not None:
                raise ValueError(f"models.{fmt}: {misfit}")
        misfit = self.format.misfit(self.format_model)
        if misfit is not None:
            raise ValueError(
                f"model: {misfit}; set models.{self.prompt_format} to a model of that provider"
            )
        return self

    @property
    def format(self) -> PromptFormat:
        """The prompt format this config writes, resolved from its name here alone: the
        packer's framing, the pack step's line and the writer's file limits all read it."""
        return FORMATS[self.prompt_format]

    @property
    def format_model(self) -> str:
        """The model this config's prompts ask for: the format's own (`models.<format>`),
        else `model` when the config names it or the format takes any, else the
        format's default (`ModelRule.default`)."""
        named = getattr(self.models, self.prompt_format, None)
        if named:
            return named
        rule = self.format.models
        if "model" in self.model_fields_set or rule is None:
            return self.model
        return rule.default

    @property
    def output_allowance(self) -> int:
        """The output tokens a prompt line allows: the answer, and the reasoning before it."""
        return self.reserved_answer + self.reasoning_headroom

    def canonical_json(self) -> str:
        """Sorted-key JSON of every setting: the input of `config_hash`. A
        `reasoning_headroom` of 0 is left out, so a config from before the setting keeps
        its hash (and its runs replay)."""
        dumped = self.model_dump(mode="json")
        if not self.reasoning_headroom:
            del dumped["reasoning_headroom"]
        return json.dumps(dumped, sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        """Short stable hash naming this exact configuration in manifests."""
        return _config_hash(self)


@lru_cache(maxsize=64)
def _config_hash(config: PackingConfig) -> str:
    """Computed once per distinct config (frozen models hash by value), not per request."""
    return hashlib.sha256(config.canonical_json().encode()).hexdigest()[:16]
