"""The one job engine (see engine.py). Apps import from here: `from stereoscope import jobs`."""
from .engine import (
                     ChunkSource,
                     JobError,
                     JobKind,
                     acquire_job_lease,
                     cancel,
                     chunk_counts,
                     execute,
                     finish,
                     get_kind,
                     is_live,
                     kinds,
                     launch,
                     lease_seconds,
                     plan_chunks,
                     queue,
                     register,
                     remaining_units,
                     resume,
                     retry_failed,
                     start,
                     sweep,
)
from .models import ACTIVE, TERMINAL, ChunkStatus, Job, JobChunk, JobStatus

__all__ = ["ACTIVE", "TERMINAL", "ChunkSource", "ChunkStatus", "Job", "JobChunk", "JobError", "JobKind", "JobStatus",
           "acquire_job_lease", "cancel", "chunk_counts", "execute", "finish", "get_kind", "is_live", "kinds",
           "launch", "lease_seconds", "plan_chunks", "queue", "register", "remaining_units", "resume",
           "retry_failed", "start", "sweep"]
