"""Tests of the parsing core (`packer.parsing`)."""
