"""Training the book's own models: pre-training and distillation loops, and the model zoo."""
