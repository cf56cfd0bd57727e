"""The flags of every `evpack` command, one module per concern.

Each concern is one `PipelineOptions` class declaring its flags as `Flag`s
(`flags`), with the parsing and validation of those flags beside it:
`input` (the request files and their limits), `catalog`, `sinks` (where
outputs go), `packing` (the packing config and event time), `stream` (the
streaming source and windows), `verify` (the answer checks) and `stored_run`
(the earlier run verify and replay read). `config_file` loads the packing
config, `runner` pins and checks the runner, `jobs` resolves the settings of
a batch or streaming job (one resolver for the flags both share) and lists the
sections each command reads, `help` renders a command's `--help`, and
`templates` writes the flex templates' `deploy/*/metadata.json` from the same
declarations.

Rejected: one options class for every flag (Beam builds one parser from every
subclass, so it worked, but one 600-line module held nine concerns and the
bounds of flags declared elsewhere).
"""
