"""Tests of answer verification and replay (`packer.verification`, `transforms.verification`,
`pipelines.verification`)."""
