"""Shared runs: several targets profiled in one application run, split per target on import and verified
(docs/ncu-behaviour.md, "Shared runs")."""
