"""The studio's entities (docs/architecture.md, "Entities")."""

from studio.models.collections import CellStatus, Collection, CollectionCell
from studio.models.jobs import JOB_ACTIVE, Job, JobStatus
from studio.models.outcomes import OutcomeImport, RecordedOutcome
from studio.models.pools import Admissibility, ModelEndpoint, ModelPool, Primitive
from studio.models.preferences import PairSource, PreferenceLabel, PreferencePair, Verdict
from studio.models.runs import (
    RUN_ENDED,
    Attempt,
    AttemptStatus,
    Domain,
    Node,
    NodeKind,
    NodeStatus,
    Run,
    RunEvent,
    RunStatus,
    Task,
)
from studio.models.training import Checkpoint, CheckpointKind, EvaluationRun, TrainingJob
from studio.models.users import ApiToken, Role, User

__all__ = [
    "CellStatus",
    "Collection",
    "CollectionCell",
    "RUN_ENDED",
    "Admissibility",
    "ApiToken",
    "Attempt",
    "AttemptStatus",
    "Checkpoint",
    "CheckpointKind",
    "Domain",
    "EvaluationRun",
    "JOB_ACTIVE",
    "Job",
    "JobStatus",
    "ModelEndpoint",
    "ModelPool",
    "Node",
    "NodeKind",
    "NodeStatus",
    "OutcomeImport",
    "PairSource",
    "PreferenceLabel",
    "PreferencePair",
    "Primitive",
    "RecordedOutcome",
    "Role",
    "Run",
    "RunEvent",
    "RunStatus",
    "Task",
    "TrainingJob",
    "User",
    "Verdict",
]
