"""Seeded generators of simulated long ops sessions (filled in by the scenarios work)."""
