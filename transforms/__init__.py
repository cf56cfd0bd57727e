"""Thin Beam transforms around the pure packer: parse, catalog, pack, counts, writers."""
