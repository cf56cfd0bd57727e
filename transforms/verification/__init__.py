"""The Beam transforms of answer verification and replay (the checks are `packer.verification`)."""
