"""Chapter YAML -> Chapter / Case / Pair, with file:line on every error; transcripts; authoring (pure)."""
