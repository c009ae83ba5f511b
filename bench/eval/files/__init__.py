"""The file-level eval: questions agents ask, answered by files (see docs/evals.md)."""
