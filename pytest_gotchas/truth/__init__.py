"""Ground truth: interpreters, the sandbox, executing transcripts and their cache, the true-prefix check."""
