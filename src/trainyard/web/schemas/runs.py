"""What the routes about several runs answer: compare and a sweep's page (built as their models in
jobs/views/run_documents.py), and the weights store (a row: weights/documents.py), named here for the
routers; a page of the store's rows is the API's own.
"""

from __future__ import annotations

from trainyard.core.document import Document
from trainyard.jobs.views.run_documents import (
    BestOfSweep,
    ComparedRun,
    Comparison,
    NotedRun,
    StoppedEarly,
    Sweep,
    SweepLine,
    SweepList,
    SweepRun,
)
from trainyard.weights.documents import Dropped, PullState, WeightsRow

__all__ = ["BestOfSweep", "Comparison", "ComparedRun", "Dropped", "NotedRun", "PullState", "StoppedEarly", "Sweep",
           "SweepLine", "SweepList", "SweepRun", "WeightsPage", "WeightsRow"]


class WeightsPage(Document):
    weights: list[WeightsRow]
    total: int
    offset: int
    limit: int
