"""The prompts of a run, as its prompt lines name them: sent and held, whatever the sink.

`evpack verify` counts a run's unanswered prompts against these. A run's
prompt lines are in its folder whatever its audit rows' sink: `prompts/`, or
`outbox/` (staged for `--prompts_topic`), and `held_prompts/` (held, never
sent; `--prompts_without_evidence hold`). Rejected: counting the manifests of
the run's folder (a run whose audit rows went to BigQuery has none there, so
every prompt read as answered), and counting held prompts as sent (they were
never asked, so no answer is missing).
"""

from collections.abc import Iterator
from dataclasses import dataclass

from packer.parsing.strict_json import Unreadable
from packer.verification.answers import AnswerError, parse_prompt_line
from transforms.bounded_lines import file_lines
from transforms.record_files import matching_files
from transforms.sinks import unqueued


@dataclass(frozen=True)
class RunPrompts:
    """The keys (`custom_id`, label or request id: as each line names its request) of a
    run's prompts: those sent, and those held in `held_prompts/`."""

    sent: frozenset[str]
    held: frozenset[str]


def _keys(pattern: str, staged: bool = False) -> Iterator[str]:
    """The key of each readable prompt line of the files `pattern` matches; an unreadable
    line is a dead letter of `evpack verify` already, not a prompt here."""
    for path in matching_files(pattern):
        for raw in file_lines(path, 0, None, None):
            line = unqueued(raw) if staged else raw
            if isinstance(line, Unreadable) or not line.strip():
                continue
            try:
                yield parse_prompt_line(line.decode("utf-8")).key
            except (AnswerError, UnicodeDecodeError):
                continue


def run_prompts(run: str) -> RunPrompts | None:
    """The prompts of the run folder `run`; None when it holds no prompt line (a streaming
    run's folder: its prompts only went to the topic)."""
    sent = {*_keys(f"{run}/prompts/*.jsonl"), *_keys(f"{run}/outbox/*.jsonl", staged=True)}
    held = set(_keys(f"{run}/held_prompts/*.jsonl"))
    if not sent and not held:
        return None
    return RunPrompts(frozenset(sent), frozenset(held))
