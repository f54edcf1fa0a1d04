"""The orchestration core: a run's state machine as plain data and pure functions.

`state` holds a run (`RunState`, its nodes and attempts), `step` moves it on (`start`,
`step`, `end`), `observe` is what a policy sees of it. Live (`studio.services.engine`) and
offline (`orchestrator.core.offline`) shells drive the same functions.
"""

from orchestrator.core.state import AttemptState, Changes, NodeState, RunSpec, RunState
from orchestrator.core.step import end, start, step

__all__ = ["AttemptState", "Changes", "NodeState", "RunSpec", "RunState", "end", "start", "step"]
