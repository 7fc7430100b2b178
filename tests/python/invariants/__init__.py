"""Invariant property testing for gpusched (issue 13).

``generator`` builds seeded random small scenarios over every feature; ``checker`` reads a
run's output files (events.csv, jobs.csv, placements.csv) and the scenario input, never the
library's internals, and lists every invariant the outputs break.
"""
