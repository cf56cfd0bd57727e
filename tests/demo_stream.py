"""Local streaming demo (`make demo-stream`): the whole job against the emulators.

Starts the Pub/Sub and BigQuery emulators, creates the topics, subscriptions
and audit tables, runs the streaming job in-process, publishes every line of
`samples/requests.jsonl` as one message (malformed lines included) plus one
redelivered request, waits for the prompts, prints a summary read back from
the generation subscription, the dead-letter subscription and BigQuery, and
shuts everything down.
"""

import json
import os
import sys
from collections import Counter
from pathlib import Path

from packer.parsing.request_records import parse_record
from tests.emulators import emulators
from tests.stream_harness import Routes, drain, publish, query_until, streaming_job
from transforms.io.bigquery import bigquery_client
from transforms.io.pubsub import split_payload

PROJECT = "evpack-demo"
DATASET = "audit"
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MAX_RECORD_BYTES = 4 * 1024 * 1024


def _expected(messages: list[str]) -> tuple[int, int]:
    """How many prompts (distinct valid request_ids) and dead letters the messages make."""
    records, valid = 0, set()
    for message in messages:
        for payload in split_payload(message.encode(), MAX_RECORD_BYTES):
            records += 1
            parsed = parse_record("demo", payload, MAX_RECORD_BYTES)
            if not isinstance(parsed, list):
                valid.add(parsed[0])
    return len(valid), records - len(valid)


def _print_table(title: str, rows: list[tuple]) -> None:
    print(f"\n{title}")
    for row in rows:
        print("  " + "  ".join(f"{cell!s:<22}" for cell in row))


def main() -> int:
    lines = [line for line in (SAMPLES / "requests.jsonl").read_text().splitlines() if line]
    messages = [*lines, lines[0]]  # the first request delivered twice
    prompts_expected, letters_expected = _expected(messages)
    with emulators(PROJECT) as running:
        os.environ.update(running.env())
        print(f"emulators: pubsub {running.pubsub_host}, bigquery {running.bigquery_host}")
        routes = Routes(PROJECT, "demo")
        routes.create()
        args = [
            *routes.job_args(DATASET),
            f"--catalog={SAMPLES / 'catalog.jsonl'}",
            f"--config={SAMPLES / 'config.yaml'}",
            "--window_seconds=10",
            "--allowed_lateness_seconds=600",
        ]
        with streaming_job(routes, args):
            publish(routes.topic("requests"), messages)
            print(f"published {len(messages)} messages; waiting for {prompts_expected} prompts")
            prompts = drain(routes.subscription("prompts"), prompts_expected)
            letters = drain(routes.subscription("dead-letters"), letters_expected)
            client = bigquery_client(PROJECT)
            table = f"{PROJECT}.{DATASET}"
            manifests = query_until(
                client,
                f"SELECT tenant_id, budget.prompt_tokens AS tokens FROM `{table}.manifests`",
                lambda rows: len(rows) >= prompts_expected,
            )
            exclusions = query_until(
                client,
                f"SELECT tenant_id, reason FROM `{table}.exclusions`",
                lambda rows: len(rows) > 0,
            )
            counts = query_until(
                client,
                f"SELECT tenant_id, reason, SUM(count) AS n FROM `{table}.exclusion_counts` "
                "GROUP BY tenant_id, reason ORDER BY tenant_id, reason",
                lambda rows: sum(r["n"] for r in rows) >= len(exclusions),
            )

    per_tenant = Counter(p.attributes["tenant_id"] for p in prompts)
    _print_table(
        f"prompts on the generation topic: {len(prompts)} (expected {prompts_expected})",
        sorted(per_tenant.items()),
    )
    stages = Counter(json.loads(letter.data)["stage"] for letter in letters)
    _print_table(
        f"dead letters: {len(letters)} (expected {letters_expected})", sorted(stages.items())
    )
    tokens = Counter()
    for row in manifests:
        tokens[row["tenant_id"]] += row["tokens"]
    _print_table(
        f"BigQuery manifests: {len(manifests)}; prompt tokens per tenant", sorted(tokens.items())
    )
    _print_table(
        f"BigQuery exclusions: {len(exclusions)}; windowed counts per tenant and reason",
        [(r["tenant_id"], r["reason"], r["n"]) for r in counts],
    )
    ok = len(prompts) == prompts_expected and len(letters) == letters_expected
    print("\ndemo-stream: " + ("OK" if ok else "MISMATCH, see above"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
