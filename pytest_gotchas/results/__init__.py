"""The floor every step stands on: the typed, versioned result schema, verdicts, rollups and comparisons (pure)."""
