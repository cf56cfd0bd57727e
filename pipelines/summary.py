"""The run summary, read from the pipeline's metrics after it finished, and from a sample of
its dead letters: their most frequent errors and what the input looks like instead."""

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricResults, MetricsFilter

from packer.parsing.dead_letters import shape_hints, top_errors
from packer.parsing.names import METRICS_NAMESPACE
from schemas import PackingConfig
from schemas.reasons import ExclusionReason
from transforms.record_files import file_records, matching_files

SAMPLED_LETTERS = 10_000
"""Dead letters the summary reads back for its top errors and hints (the first ones)."""


@dataclass(frozen=True)
class RunSummary:
    """What a run did, from its counters, distributions and gauges."""

    records_in: int
    requests_in: int
    prompts_out: int
    candidates_in: int
    evidence_packed: int
    evidence_folded: int
    """Candidates folded into a packed block (its `derived_from`): in the prompt, not excluded."""
    dead_letters: dict[str, int]
    excluded: dict[str, int]
    prompt_tokens_p50: int | None
    prompt_tokens_p95: int | None
    prompt_tokens_max: int | None
    elapsed_seconds: float
    outputs: dict[str, str] = field(default_factory=dict)
    bytes_read: int = 0
    top_errors: list[tuple[str, int]] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    prompts_without_evidence: int = 0
    """Prompts of requests whose every candidate was excluded: the model can only abstain."""
    facets_untagged: int = 0
    """Requests naming facets with no candidate tagged `query_facets` (coverage unknown)."""
    prompts_held: int = 0
    """Of `prompts_without_evidence`, those held in `held_prompts/` rather than sent
    (`--prompts_without_evidence hold`)."""
    submission: list[str] = field(default_factory=list)
    """What submitting the prompt files takes, and the jobs the provider will refuse
    (`submission_notes`)."""

    @property
    def dead_letters_total(self) -> int:
        return sum(self.dead_letters.values())

    def hopeless(self, max_dead_letter_percent: float) -> str | None:
        """Why the run must not pass as a success (no prompt, too many dead letters), or None."""
        return hopeless_run(
            self.records_in, self.prompts_out, self.dead_letters_total, max_dead_letter_percent
        )

    @property
    def alerts(self) -> list[str]:
        """What an operator must look at even when the run passed: candidates of another
        tenant mean the retrieval index is crossing tenants."""
        alerts = []
        crossed = self.excluded.get(ExclusionReason.OTHER_TENANT, 0)
        if crossed:
            alerts.append(
                f"{crossed} candidates belong to another tenant than their request "
                "(other_tenant): retrieval is crossing tenants; check the index's tenant filter"
            )
        if self.prompts_without_evidence:
            fate = (
                f"{self.prompts_held} held in held_prompts/, not sent"
                if self.prompts_held
                else "sent; --prompts_without_evidence hold keeps them from the queue"
            )
            alerts.append(
                f"{self.prompts_without_evidence} prompts carry no evidence (every candidate "
                f"of their request was excluded): the model can only abstain on them ({fate})"
            )
        if self.facets_untagged:
            alerts.append(
                f"{self.facets_untagged} requests name facets but none of their candidates "
                "carries query_facets: facet coverage is unknown, no facet was declared "
                "uncovered; tag candidates (docs/input.md, Facets)"
            )
        return alerts

    @property
    def requests_per_second(self) -> float:
        return self.requests_in / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    def render(self) -> str:
        """A short human-readable report."""

        def by_key(counts: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

        def tokens(value: int | None) -> str:
            return "-" if value is None else str(value)

        lines = [
            f"evpack: done in {self.elapsed_seconds:.1f} s "
            f"({self.requests_per_second:.1f} requests/s)",
            f"  records read     {self.records_in} ({self.bytes_read} bytes, decompressed)",
            f"  requests         {self.requests_in}",
            f"  prompts out      {self.prompts_out - self.prompts_held}"
            + (f", held {self.prompts_held}" if self.prompts_held else ""),
            f"  dead letters     {self.dead_letters_total} ({by_key(self.dead_letters)})",
            f"  candidates in    {self.candidates_in} (evidence blocks {self.evidence_packed}, "
            f"folded into them {self.evidence_folded}, excluded {sum(self.excluded.values())})",
            f"  exclusions       {by_key(self.excluded)}",
            f"  context tokens   p50 {tokens(self.prompt_tokens_p50)}, "
            f"p95 {tokens(self.prompt_tokens_p95)}, max {tokens(self.prompt_tokens_max)}",
        ]
        lines += [f"  alert            {alert}" for alert in self.alerts]
        lines += [f"  top error        {n} x {kind}" for kind, n in self.top_errors]
        lines += [f"  hint             {hint}" for hint in self.hints]
        lines += [f"  submit           {note}" for note in self.submission]
        lines += [f"  {name:<16} {path}" for name, path in self.outputs.items()]
        return "\n".join(lines)


def hopeless_run(
    records_in: int, prompts_out: int, dead_letters: int, max_dead_letter_percent: float
) -> str | None:
    """Why a batch run must not pass as a success, or None: it made no prompt, or more than
    `max_dead_letter_percent` of its records are dead letters. The one rule of the local
    summary and of a Dataflow job's own last step (`pipelines.own_commit.FinalCommit`)."""
    if prompts_out == 0:
        return f"no prompt was made from {records_in} records read"
    share = 100 * dead_letters / max(records_in, 1)
    if share > max_dead_letter_percent:
        return (
            f"{share:.0f}% of the records read ({dead_letters} of {records_in}) are dead "
            f"letters, more than --max_dead_letter_percent={max_dead_letter_percent:g}"
        )
    return None


def submission_notes(config: PackingConfig, prompts: str | None) -> list[str]:
    """What submitting a run's prompt files (the glob `prompts`; None when it wrote none)
    to its format's provider takes (`PromptFormat.submit_notes`). Files are read back to
    count their lines only where the provider refuses a job below a number of records
    (Bedrock): Beam's shards are not filled evenly, so the total tells nothing per file."""
    fmt = config.format
    if fmt.submission is None or prompts is None:
        return []
    count = fmt.submission.min_records is not None
    lines = {path: _line_count(path) if count else None for path in matching_files(prompts)}
    return fmt.submit_notes(config.format_model, lines)


def _line_count(path: str) -> int:
    with FileSystems.open(path) as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def _letters(pattern: str) -> Iterator[tuple[str, str]]:
    for _, line in file_records(pattern, "jsonl"):
        if isinstance(line, bytes):
            letter = json.loads(line)
            yield letter["error"], letter["payload"]


def sampled_letters(pattern: str | None) -> list[tuple[str, str]]:
    """(error, payload) of the first `SAMPLED_LETTERS` dead letters in files matching `pattern`
    (none when they went to BigQuery)."""
    if pattern is None or not matching_files(pattern):
        return []
    return list(islice(_letters(pattern), SAMPLED_LETTERS))


def summarize(
    metrics: MetricResults,
    elapsed_seconds: float,
    outputs: dict[str, str] | None = None,
    letters: list[tuple[str, str]] | None = None,
) -> RunSummary:
    """Collect the evpack metrics of a finished run, and what its dead letters say."""
    found = metrics.query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    counters: dict[str, int] = {}
    for result in found[MetricResults.COUNTERS]:
        name = result.key.metric.name
        counters[name] = counters.get(name, 0) + result.committed
    gauges = {r.key.metric.name: r.committed.value for r in found[MetricResults.GAUGES]}
    token_max = None
    for result in found[MetricResults.DISTRIBUTIONS]:
        if result.key.metric.name == "prompt_tokens" and result.committed.count:
            token_max = result.committed.max

    def prefixed(prefix: str) -> dict[str, int]:
        return {
            k.removeprefix(prefix): v for k, v in counters.items() if k.startswith(prefix) and v
        }

    return RunSummary(
        records_in=counters.get("records_in", 0),
        requests_in=counters.get("requests_in", 0),
        prompts_out=counters.get("requests_packed", 0),
        candidates_in=counters.get("candidates_in", 0),
        evidence_packed=counters.get("evidence_packed", 0),
        evidence_folded=counters.get("evidence_folded", 0),
        dead_letters=prefixed("dead_letters_"),
        excluded=prefixed("excluded_"),
        prompt_tokens_p50=gauges.get("prompt_tokens_p50"),
        prompt_tokens_p95=gauges.get("prompt_tokens_p95"),
        prompt_tokens_max=token_max,
        elapsed_seconds=elapsed_seconds,
        outputs=outputs or {},
        bytes_read=counters.get("bytes_read", 0),
        top_errors=top_errors(error for error, _ in letters or []),
        hints=shape_hints(payload for _, payload in letters or []),
        prompts_without_evidence=counters.get("prompts_without_evidence", 0),
        facets_untagged=counters.get("facets_untagged", 0),
        prompts_held=counters.get("prompts_held", 0),
    )
