"""The embedding model's training: corpus, pairs, probe and fine-tune."""
