"""Pipelines: entry points that compose transforms; no decision logic lives here."""
