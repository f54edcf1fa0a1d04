"""OrchRM: preference pairs over plans, a Bradley-Terry reward model, and best-of-N selection."""
