"""The orchestration core: a run's state machine as plain data and pure functions, closed
on itself (it imports nothing of the project outside `orchestrator/core/`, a test checks).

`protocol` is what a policy observes and may do, `policy` what the core asks of one,
`envelope` an attempt's result, `items` a composite task's items, `checking` which benchmarks
have a checker; `state` holds a run (`RunState`, its nodes and attempts), `step` moves it on
(`start`, `step`, `step_many`, `end`), with `tree` and `actions`; `observe` is what a policy sees of it.
Two shells drive the same functions: live (`studio.services.live_shell`) and offline
(`orchestrator.offline.shell`).
"""

from orchestrator.core.state import AttemptState, Changes, NodeState, RunSpec, RunState
from orchestrator.core.step import end, start, step, step_many

__all__ = ["AttemptState", "Changes", "NodeState", "RunSpec", "RunState", "end", "start", "step", "step_many"]
