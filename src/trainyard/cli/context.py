"""Opening the shared job store from a command, and the job documents it prints (the API's own:
jobs/kinds/documents.py).

Light to import: the store (SQLAlchemy) and the documents load when a command calls these, so
`--help` and refusals that need no store never pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainyard.jobs.context import Context
    from trainyard.jobs.kinds.documents import JobBrief, JobDetail
    from trainyard.jobs.runs.manager import JobManager
    from trainyard.jobs.store.store import Job


def cli_context() -> Context:
    """The store and manager, with jobs whose holder died already marked as interrupted (and
    their leases freed), so a command never shows a dead job as running or refuses to resume it."""
    from trainyard.jobs.context import open_context

    ctx = open_context()
    ctx.manager.reap()
    _act(ctx)
    return ctx


def _act(ctx: Context) -> None:
    """Act as the user whose token ``trainyard login`` kept (its rights, its jobs), else as the
    home's first admin (whoever runs commands on the home directly holds its store)."""
    from trainyard.cli.login import logged_in
    from trainyard.jobs.accounts import users
    from trainyard.jobs.store.actor import act_as

    act_as(logged_in(ctx) or users.actor_of(users.first_admin(ctx.store)))


def job_brief(job: Job) -> JobBrief:
    from trainyard.jobs.views.documents import job_brief as brief

    return brief(job)


def job_detail(manager: JobManager, job: Job) -> JobDetail:
    from trainyard.jobs.views.documents import job_detail as detail

    return detail(manager, job)
