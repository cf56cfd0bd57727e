"""Our token counts against tiktoken's on every text of the evaluation sets, and the
prompts packed from them against their budgets.

    python -m benchmarks.token_counts [--data-dir ../shared/data] [--limit N]
        [--budgets 150 512 2048]

`packer.tokens` counts cl100k_base with its own pre-tokenizer in C and a memo of each
piece's count (`PieceCounts`); the count must be tiktoken's, exactly, or a prompt could
go over its budget. This counts every question and candidate of every set
(`benchmarks.quality`) both ways, one counter for the whole run as a worker keeps one,
and packs every request at each budget with the default config: each prompt is
recounted by tiktoken, every message encoded whole, and must be the ledger's
`prompt_tokens`, its evidence within the budget. Prints the figures as JSON; exits 1 on
any difference. The unit tests check the same on fuzzed Unicode, on every code point
in two contexts and on every character class of every Unicode block
(`tests/test_pretokenize.py`); this is the check on real text.
"""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.adapters import DEFAULT_DATA_DIR, EVAL_TIME, DataMissingError, catalog_documents
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.quality import DATASETS
from packer import Catalog, PackerRuntime, pack_request
from packer.tokens import PieceCounts
from schemas import PackingConfig, RenderedMessage, Request
from schemas.prompt_formats.base import OPENAI_FRAMING

BUDGETS = (150, 512, 2048)


def recount(encode: Callable[[str], list[int]], result_messages: Sequence[RenderedMessage]) -> int:
    """A prompt's tokens counted the slow, obvious way: every message encoded whole."""
    framing = OPENAI_FRAMING
    return framing.reply_priming + sum(
        framing.per_message
        + (len(encode(m.role)) if framing.count_roles else 0)
        + len(encode(m.content))
        for m in result_messages
    )


def check(data_dir: Path, limit: int | None, budgets: Sequence[int]) -> dict[str, int]:
    """Texts and prompts counted, and how many differ from tiktoken or go over budget."""
    runtime = PackerRuntime.load()
    encoding = runtime.tokens.encoding
    pieces = PieceCounts.of(encoding)
    if pieces is None:
        raise RuntimeError("the C pre-tokenizer is not built: nothing to check")
    requests: list[Request] = []
    for dataset in DATASETS.values():
        requests += [case.request for case in dataset.load(data_dir, limit)]
    texts = [t for r in requests for t in (r.question, *(c.text for c in r.candidates))]
    figures = {"texts": len(texts), "characters": sum(map(len, texts))}
    figures["texts counted differently"] = sum(
        pieces.count(t) != len(encoding.encode_ordinary(t)) for t in texts
    )
    catalog = Catalog(catalog_documents(requests))
    figures |= {"prompts": 0, "prompts counted differently": 0, "prompts over budget": 0}
    for budget in budgets:
        config = PackingConfig(max_evidence_tokens=budget)
        for request in requests:
            result = pack_request(request, catalog, config, runtime, EVAL_TIME)
            ledger = result.manifest.budget
            exact = recount(encoding.encode_ordinary, result.prompt.messages)
            figures["prompts"] += 1
            figures["prompts counted differently"] += exact != ledger.prompt_tokens
            figures["prompts over budget"] += ledger.used > budget
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--limit", type=int, help="first N questions of each set (all: none)")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    args = parser.parse_args(argv)
    try:
        with offline_cl100k_cache():
            figures = check(args.data_dir, args.limit, args.budgets)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(figures, indent=1))
    wrong = ("texts counted differently", "prompts counted differently", "prompts over budget")
    return 1 if any(figures[key] for key in wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
