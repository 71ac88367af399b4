"""Path and query parameters shared by the controllers, with their documentation."""

from __future__ import annotations

from typing import Annotated, Literal

from litestar.params import HeaderParameter, Parameter

CollectionId = Annotated[int, Parameter(description="The collection's id.", ge=1, le=2**31 - 1)]
RunId = Annotated[int, Parameter(description="The run's id.", ge=1, le=2**31 - 1)]
JobId = Annotated[int, Parameter(description="The job's id.", ge=1, le=2**31 - 1)]
PoolId = Annotated[int, Parameter(description="The pool's id.", ge=1, le=2**31 - 1)]
SnapshotId = Annotated[int, Parameter(description="The snapshot's id.", ge=1, le=2**31 - 1)]
AnalysisId = Annotated[int, Parameter(description="The analysis's id.", ge=1, le=2**31 - 1)]
TokenId = Annotated[int, Parameter(description="The token's id.", ge=1, le=2**31 - 1)]
TeamName = Annotated[str, Parameter(description="The team's name.", min_length=1, max_length=200)]
Topic = Annotated[str, Parameter(description="A topic id.", min_length=1, max_length=100)]
Metric = Annotated[str | None, Parameter(description="A metric name (default: the collection's official metric).",
                                         max_length=200)]
Offset = Annotated[int, Parameter(description="Items to skip.", ge=0, le=2**31 - 1)]
Limit = Annotated[int, Parameter(description="Items to return (at most 200 collections or 500 runs are).",
                                 ge=1, le=100_000)]
QrelsVersion = Annotated[int | None, Parameter(description="A qrels version number (default: the board's).",
                                               ge=1, le=2**31 - 1)]
TestName = Annotated[str | None, Parameter(description="A stored test's name (default: the configured one).",
                                           max_length=50)]
TeamParam = Annotated[str | None, Parameter(description="Organisers: the team the run is submitted for.",
                                            max_length=200)]
Version = Annotated[int, Parameter(description="A qrels version number.", ge=1, le=2**31 - 1)]
IdempotencyKeyHeader = Annotated[str | None, HeaderParameter(
    name="Idempotency-Key", required=False, min_length=1, max_length=200,
    description="Any unique string (a UUID): an upload retried with the same key and body gets the first "
                "answer again instead of storing a second run or qrels version; the same key with another "
                "body is refused (422).")]

# The metadata of a run submitted as the raw body (a multipart form sends them as form fields).
RunDescription = Annotated[str | None, Parameter(description="What the run is (shown on its page).",
                                                 max_length=20_000)]
RunType = Annotated[Literal["automatic", "manual", "interactive"] | None, Parameter(
    description="How the run was made (default automatic): manual or interactive runs had a person in the loop.")]
UsesTrainingData = Annotated[bool | None, Parameter(
    description="Whether the run used the collection's training data (left out: not stated).")]
UsesExternalResources = Annotated[bool | None, Parameter(
    description="Whether the run used external resources (left out: not stated).")]
Priority = Annotated[int | None, Parameter(description="TREC's judging priority within the team (1 = judged first).",
                                           ge=1, le=1000)]
Primary = Annotated[bool | None, Parameter(description="Whether this is one of the team's primary runs.")]
