"""/api/weights: the pretrained weights store (list, pull with live progress, import, remove,
visibility). Each entry is its importer's or puller's, private unless "team"; another user's
private entry reads as absent (jobs/accounts/weights_access.py)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from fastapi import APIRouter, File, Form, Query, Request, UploadFile

from trainyard.core.document import Document
from trainyard.core.errors import InvalidInput
from trainyard.core.ownership import Visibility
from trainyard.web.schemas.runs import WeightsPage, WeightsRow
from trainyard.web.uploads import save_upload

if TYPE_CHECKING:
    from trainyard.weights.pulls import Pulls

router = APIRouter(prefix="/api/weights", tags=["weights"])
T = TypeVar("T")
SOURCES = ("torchvision", "timm", "mine", "user")  # "user": what "mine" was called first


def pulls(request: Request) -> Pulls:
    """The app's store and its background pulls, made on first use."""
    # The store's catalogue reads the network registry, which imports torch: loaded on first use.
    from trainyard.jobs.accounts.weights_access import ActorAccess
    from trainyard.weights.pulls import Pulls
    from trainyard.weights.store import WeightsStore

    state = request.app.state
    if getattr(state, "weight_pulls", None) is None:
        access = ActorAccess(state.ctx.store)  # asks each request's acting user
        state.weight_pulls = Pulls(WeightsStore.from_settings(state.ctx.settings, access))
    return state.weight_pulls


async def _call(function: Callable[..., T], *args: object) -> T:
    # The store reads big files and may import timm: off the event loop. Its UserErrors become
    # their 4xx in web/errors.py.
    return await asyncio.to_thread(function, *args)


@router.get("", response_model=WeightsPage)
async def list_weights(request: Request, search: str = "", source: str | None = None,
                       present: bool = False, limit: int = Query(100, ge=0),
                       offset: int = Query(0, ge=0)) -> WeightsPage:
    """One page of the entries whose name or network contains every word of ``search``, your own
    first: ``limit`` rows from ``offset`` (``limit`` 0: all of them) and the ``total`` matching."""
    if source is not None and source not in SOURCES:
        raise InvalidInput(f"source should be one of {', '.join(SOURCES[:3])}")
    p = pulls(request)
    rows = await _call(p.store.list, search, source, present)
    shown = rows[offset:offset + limit] if limit > 0 else rows[offset:]
    return WeightsPage(weights=[WeightsRow(**row, pull=p.status(row["name"])) for row in shown], total=len(rows),
                       offset=offset, limit=limit)


@router.get("/{name}", response_model=WeightsRow)
async def get_weights(request: Request, name: str) -> WeightsRow:
    p = pulls(request)
    row = await _call(p.store.resolve, name)  # the store's row (weights/store.py ``describe``)
    return WeightsRow(**row, pull=p.status(row["name"]))


@router.post("/{name}/pull", status_code=202, response_model=WeightsRow)
async def pull_weights(request: Request, name: str,
                       visibility: Visibility | None = None) -> WeightsRow:
    """Start downloading a published entry (yours, private unless ``visibility`` is team);
    GET /api/weights/{name} shows its progress."""
    p = pulls(request)
    row = await _call(p.store.resolve, name)
    if row["source"] == "user":
        raise InvalidInput(f"{row['name']} is your own entry: it has nothing to pull")
    return WeightsRow(**row, pull=p.start(row["name"], visibility))


@router.post("", status_code=201, response_model=WeightsRow)
async def import_weights(request: Request, name: str = Form(...), network: str | None = Form(None),
                         mean: str | None = Form(None), std: str | None = Form(None),
                         visibility: Visibility | None = Form(None),
                         file: UploadFile = File(...)) -> WeightsRow:
    """Add an uploaded file: a published entry's (hash-checked) or your own for ``network``,
    with its input normalisation (``mean``/``std`` per channel on 0..1, comma-separated)."""
    settings = request.app.state.ctx.settings
    # save_upload: the file name made harmless, the size limit, an empty file refused
    path = await save_upload(file, settings.uploads_dir, settings.max_upload_mb * 2**20)
    try:
        row = await _call(pulls(request).store.import_file, name, path, network or None, mean or None, std or None,
                          visibility)
        return WeightsRow(**row)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)  # the upload's own folder


class WeightsPatch(Document):
    visibility: Visibility


@router.patch("/{name}", response_model=WeightsRow)
async def patch_weights(request: Request, name: str, body: WeightsPatch) -> WeightsRow:
    """Make a stored entry private or the team's (its owner or an admin)."""
    return WeightsRow(**await _call(pulls(request).store.set_visibility, name, body.visibility))


@router.delete("/{name}", response_model=WeightsRow)
async def remove_weights(request: Request, name: str) -> WeightsRow:
    return WeightsRow(**await _call(pulls(request).store.remove, name))
