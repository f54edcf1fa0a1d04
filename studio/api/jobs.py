"""What every job's answer shares (studio.models.Job): training jobs, evaluations and
collections are read, and shown in the browser's JobTable, alike."""

from datetime import datetime

from ninja import Field, Schema


class JobOut(Schema):
    id: int
    status: str = Field(description="queued, running, succeeded, stopped (a collection's budget), failed or cancelled")
    progress: float = Field(description="0 to 1")
    message: str = Field(description="what it is doing, or why it ended as it did")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
