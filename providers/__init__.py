"""The calls an attempt makes, with no Django and no Celery: the litellm client (`llm`), the
primitives that run on it, the conversation, the answer checkers and the sandbox they use,
replay of recorded outcomes, and the local model. `primitives.run_attempt` runs one attempt.

Both `studio/` (/v1's fast path calls a pair in the web process) and `workers/` (the Celery
batches) import it; it imports neither. `scripted_openai` and `local_server` start the
OpenAI-compatible servers that the tests and the benches call."""
