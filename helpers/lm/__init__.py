"""Language-model computations: batching under a token budget, sentence scoring, token log-probabilities."""
