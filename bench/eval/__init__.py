"""Retrieval evals: code-rag against a plain baseline on held-out queries."""
