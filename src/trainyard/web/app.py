"""``create_app(settings)``: the FastAPI application with its API, pages and scheduler."""

from __future__ import annotations

import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from trainyard import __version__
from trainyard.core import server_token
from trainyard.jobs.accounts import users
from trainyard.jobs.context import open_context
from trainyard.jobs.runs.scheduler import Scheduler
from trainyard.jobs.scheduling.deployment import record_backend
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings
from trainyard.web.audit_trail import AuditMiddleware
from trainyard.web.audit_trail import router as audit_router
from trainyard.web.auth import TokenAuthMiddleware
from trainyard.web.errors import install_error_handlers
from trainyard.web.identity import Identities
from trainyard.web.routers import (
    audit_page,
    compare,
    datasets,
    docs,
    export,
    export_formats,
    inference,
    inference_pages,
    jobs,
    labels,
    models,
    network_search,
    networks,
    pages,
    sign_in,
    system,
    weights,
    weights_pages,
)
from trainyard.web.security import SameOriginMiddleware
from trainyard.web.sessions import LoginLimiter
from trainyard.web.uploads import RequestSizeLimit

STATIC = Path(__file__).parent / "static"
ROUTERS = [jobs.router, datasets.router, models.router, networks.router, network_search.router,
           system.router, inference.router, export.router, export_formats.router, pages.router, inference_pages.router,
           weights.router, weights_pages.router, docs.router, audit_router,
           sign_in.router, audit_page.router]
ROUTERS[:0] = [compare.router, labels.router]  # before jobs: /api/jobs/compare is not a job's id


def create_app(settings: Settings | None = None, *, pools: Pools | None = None,
               run_scheduler: bool = True, warm_networks: bool = True, publish_token: bool = False) -> FastAPI:
    """Build the app. ``run_scheduler=False`` serves the API without starting any job (tests).

    ``warm_networks`` counts the standard networks' parameters in a background thread once the
    server is up, so the new-model form never waits for it; that thread imports torch, which the
    request paths themselves never need for jobs, datasets and pages. ``publish_token`` (serve):
    the server's token is written for the CLI while it runs (core/server_token.py).
    """
    ctx = open_context(settings, pools)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if publish_token:
            server_token.write(ctx.settings.home, app.state.auth_token)
        if run_scheduler:
            # Where this store's jobs run is this server's choice; CLIs follow it (jobs/scheduling/deployment.py).
            record_backend(ctx.store, ctx.settings.cluster)
            app.state.scheduler = Scheduler(ctx.manager)
            app.state.scheduler.start()
        if run_scheduler and warm_networks:
            threading.Thread(target=networks.warm, args=(ctx,), name="warm-networks", daemon=True).start()
        yield
        if run_scheduler:
            await app.state.scheduler.stop()
        workers = sys.modules.get("trainyard.inference.worker_pool")  # loaded (with torch) on first classify
        if workers is not None:
            workers.POOL.close()  # the custom networks' model workers
        if publish_token:  # here, not after uvicorn.run: uvicorn ends by re-raising the SIGTERM
            server_token.remove(ctx.settings.home, app.state.auth_token)

    # docs_url/redoc_url off: routers/docs.py serves /docs from vendored assets (no CDN).
    app = FastAPI(title="trainyard", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Turn a folder of images into a trained, deployable network.")
    app.state.ctx = ctx
    app.state.scheduler = None
    install_error_handlers(app)
    # A train and a validation archive, each up to the limit, plus the form around them.
    app.add_middleware(RequestSizeLimit, max_bytes=(2 * ctx.settings.max_upload_mb + 1) * 2**20)
    app.state.login_limiter = LoginLimiter()  # sign-ins and bearer tokens count against one limit
    # Every door needs the credential, on localhost too: TRAINYARD_AUTH_TOKEN, else a fresh token
    # of this server's own, which ``serve`` prints in its URL and writes for the CLI (core/server_token.py).
    app.state.auth_token = ctx.settings.auth_token or server_token.fresh()
    # The first admin, with the server's token as its credential, in a home that has no user yet.
    users.bootstrap(ctx.store, app.state.auth_token, keep_token=bool(ctx.settings.auth_token))
    app.state.identities = Identities(ctx.store, app.state.auth_token)
    app.add_middleware(AuditMiddleware)  # inside the auth: it knows the user
    app.add_middleware(TokenAuthMiddleware, token=app.state.auth_token, identities=app.state.identities,
                       limiter=app.state.login_limiter)
    # Added last, so it runs first: a foreign Host or a cross-site write gets no further.
    app.add_middleware(SameOriginMiddleware, settings=ctx.settings)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for router in ROUTERS:
        app.include_router(router)
    return app
