"""The flex templates' `deploy/<job>/metadata.json`, generated from the options.

    python -m pipelines.options.templates [--check]     (make templates)

Every parameter is a flag a job reads (`jobs.TEMPLATE_SECTIONS`) that declares how a
template shows it (`flags.Param`): its help text and default are the flag's,
its regex and label are declared beside it, so a flag changed in one place
changes the template. `--check` only verifies the files are current (a test
does the same). Rejected: hand-kept files checked against the options by a
test, which told that they drifted but not how to fix it.
"""

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.command import CommandParser, run_parsed
from pipelines.options.flags import Flag, Param, parse_bool, section_flags
from pipelines.options.jobs import TEMPLATE_SECTIONS

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@dataclass(frozen=True)
class Template:
    """One flex template: what Dataflow shows of the job, and which parameters it needs."""

    name: str
    description: str
    required: frozenset[str]
    labels: dict[str, str] = field(default_factory=dict)
    """Labels that differ from the flag's own for this job."""
    modes: dict[str, Any] = field(default_factory=dict)
    """The template's streaming modes (`streaming` itself is set from the job)."""


TEMPLATES = {
    "batch": Template(
        "evidence-packer batch",
        "Packs request files (JSONL or Parquet on Cloud Storage) into cited prompts under "
        "an exact token budget; writes prompts, audit tables (Parquet) and dead letters "
        "under the output prefix.",
        required=frozenset({"input", "output"}),
    ),
    "streaming": Template(
        "evidence-packer streaming",
        "Reads requests from Pub/Sub, reauthorizes, deduplicates and packs them into cited "
        "prompts under an exact token budget, publishes prompts to the generation topic and "
        "writes audit rows to BigQuery.",
        required=frozenset({"subscription", "prompts_topic", "dead_letter_topic"}),
        labels={"output": "Audit files (windowed)"},
        modes={
            "supportsAtLeastOnce": True,
            "supportsExactlyOnce": True,
            "defaultStreamingMode": "EXACTLY_ONCE",
        },
    ),
}
"""Each job's template, by the name of its folder under `deploy/`."""


def _default(flag: Flag) -> str:
    return str(flag.default).lower() if isinstance(flag.default, bool) else str(flag.default)


def parameter(flag: Flag, param: Param, template: Template) -> dict[str, Any]:
    """The parameter of one flag, shown as `param` says, in `template` (Dataflow's
    `ParameterMetadata`, as JSON)."""
    choices = flag.choices or ()
    unlabelled = [choice for choice in choices if choice not in param.choice_labels]
    if unlabelled:
        raise ValueError(f"--{flag.name}: no template label for {unlabelled} (its `Param`)")
    found: dict[str, Any] = {
        "name": flag.name,
        "label": template.labels.get(flag.name, param.label),
        "helpText": flag.help,
        "isOptional": flag.name not in template.required,
        "regexes": [param.regex or f"^({'|'.join(choices)})$"],
    }
    if flag.switch:  # given as true/false; the launcher passes it as the command takes it
        found["defaultValue"] = "false"
    elif flag.default is not None:
        found["defaultValue"] = _default(flag)
    if choices:
        found["paramType"] = "ENUM"
        labels = param.choice_labels
        found["enumOptions"] = [{"value": value, "label": labels[value]} for value in choices]
    elif flag.type is parse_bool:
        found["paramType"] = "BOOLEAN"
    elif flag.type in (int, float):
        found["paramType"] = "NUMBER"
    elif param.param_type is not None:
        found["paramType"] = param.param_type
    return found


def metadata_text(job: str) -> str:
    """The `metadata.json` of `job`'s template, as committed (two-space indent, newline)."""
    template = TEMPLATES[job]
    flags = [f for section in TEMPLATE_SECTIONS[job] for f in section_flags(section)]
    metadata = {
        "name": template.name,
        "description": template.description,
        "streaming": job == "streaming",
        **template.modes,
        "parameters": [parameter(f, f.template, template) for f in flags if f.template],
    }
    return json.dumps(metadata, indent=2, ensure_ascii=False) + "\n"


def stale_templates(deploy: Path = DEPLOY) -> list[Path]:
    """The `metadata.json` files under `deploy` that differ from the options."""
    paths = {job: deploy / job / "metadata.json" for job in TEMPLATES}
    return [
        path
        for job, path in paths.items()
        if not path.exists() or path.read_text(encoding="utf-8") != metadata_text(job)
    ]


def _write(args: argparse.Namespace) -> int:
    if args.check:
        stale = stale_templates(args.deploy)
        for path in stale:
            print(f"{path} is stale: run `make templates`", file=sys.stderr)
        return 1 if stale else 0
    for job in TEMPLATES:
        path = args.deploy / job / "metadata.json"
        path.write_text(metadata_text(job), encoding="utf-8")
        print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser("python -m pipelines.options.templates", __doc__.splitlines()[0])
    parser.add_argument("--deploy", type=Path, default=DEPLOY, help="the deploy/ folder")
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    return run_parsed(parser, _write, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
