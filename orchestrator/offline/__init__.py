"""The offline side: the shells that run the orchestration core on recorded outcomes (`shell`:
runs answered from a table; `composite_shell`: composites run so and read back as plans), and
the evaluations as a library (`items.evaluate_items`, `composites.evaluate_composites`), which
the CLIs (`python -m orchestrator.evaluate`, `... .evaluate_composite`) and the studio's
evaluation jobs call."""
