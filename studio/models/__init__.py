"""The studio's entities (docs/architecture.md, "Entities")."""

from studio.models.collections import (
    COLLECTION_ACTIVE,
    CellStatus,
    Collection,
    CollectionCell,
    CollectionStatus,
)
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
from studio.models.training import (
    JOB_ACTIVE,
    Checkpoint,
    CheckpointKind,
    EvaluationRun,
    JobStatus,
    TrainingJob,
)
from studio.models.users import ApiToken, Role, User

__all__ = [
    "COLLECTION_ACTIVE",
    "CellStatus",
    "Collection",
    "CollectionCell",
    "CollectionStatus",
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
