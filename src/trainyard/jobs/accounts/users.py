"""Users, their roles and personal API tokens: add, list, disable, set a role, make and revoke
tokens, and resolve a bearer token to its user.

The first admin: a home that has no users yet (a fresh one, or one made before accounts) gets
one at the server's first start, ``admin``, whose credential is the server's token: the URL that
``serve`` prints keeps working, and a home's TRAINYARD_AUTH_TOKEN is stored as that admin's
personal token, so the old token keeps working after the upgrade. Jobs with no owner (made
before accounts, or by the CLI on the home itself) are the first admin's.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from types import EllipsisType

from sqlalchemy import func, select, update

from trainyard.core.document import Document
from trainyard.core.errors import Conflict, InvalidInput, NotFound
from trainyard.core.ownership import ROLES, Actor
from trainyard.core.status import Status
from trainyard.jobs.scheduling import quotas
from trainyard.jobs.store.account_tables import TokenRow, UserRow
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings

NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
FIRST_ADMIN = "admin"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def checked_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"no role {role!r}: roles are {', '.join(ROLES)}")
    return role


class QuotaUse(Document):
    """How much of one quota a user uses, and the quota that applies (its own or the default; 0: none)."""

    used: int
    quota: int


class UserDocument(Document):
    """A user as the CLI's --json and the API show it (never a secret; ``token`` only when one
    was just made, shown that once)."""

    name: str
    role: str
    disabled: bool
    created_at: float
    has_password: bool
    # The user's own quotas (jobs/scheduling/quotas.py); None: the server's default.
    max_jobs: int | None = None  # running jobs at once
    max_gpus: int | None = None  # GPUs leased at once
    max_cpu_slots: int | None = None  # CPU training slots at once
    max_disk_bytes: int | None = None  # bytes of their dataset and model job folders
    usage: dict[str, QuotaUse] | None = None  # jobs, gpus, cpu_slots, disk_bytes: where asked for
    token: str | None = None


# The quota columns of a user, and what each counts (for messages).
QUOTA_FIELDS = {"max_jobs": "jobs", "max_gpus": "GPUs", "max_cpu_slots": "CPU slots",
                "max_disk_bytes": "bytes of disk"}


def user_document(row: UserRow, token: str | None = None,
                  usage: dict[str, QuotaUse] | None = None) -> UserDocument:
    return UserDocument(name=row.name, role=row.role, disabled=row.disabled, created_at=row.created_at,
                        has_password=row.password_hash is not None, token=token, usage=usage,
                        **{field: getattr(row, field) for field in QUOTA_FIELDS})


def usage_of(store: Store, name: str, settings: Settings) -> dict[str, QuotaUse]:
    """Each quota of user ``name`` with what they use of it now."""
    limits = quotas.quotas_of(store, name, settings)
    used = quotas.usage_of(store, name, settings.jobs_dir)
    with store.session() as s:
        own = s.get(UserRow, name)
        running = s.execute(select(func.count()).select_from(Job).where(
            Job.owner == name, Job.status == Status.RUNNING)).scalar_one()
    max_jobs = own.max_jobs if own is not None and own.max_jobs is not None else settings.user_max_jobs
    return {"jobs": QuotaUse(used=running, quota=max_jobs),
            **{field: QuotaUse(used=getattr(used, field), quota=getattr(limits, field))
               for field in ("gpus", "cpu_slots", "disk_bytes")}}


def get_user(store: Store, name: str) -> UserRow:
    with store.session() as s:
        row = s.get(UserRow, name)
    if row is None:
        raise NotFound(f"no user {name!r}")
    return row


def add_user(store: Store, name: str, role: str, password: str | None = None) -> UserRow:
    """A new user; InvalidInput for a bad name or role, Conflict when the name is taken."""
    if not NAME.fullmatch(name or ""):
        raise InvalidInput(f"user name {name!r} should be 1 to 32 lower-case letters, digits, _ or -, "
                           "starting with a letter")
    row = UserRow(name=name, role=checked_role(role), disabled=False, created_at=time.time(),
                  password_hash=hash_password(password) if password else None)
    with store.session.begin() as s:
        if s.get(UserRow, name) is not None:
            raise Conflict(f"user {name!r} exists already")
        s.add(row)
    return row


def list_users(store: Store) -> list[UserRow]:
    with store.session() as s:
        return list(s.scalars(select(UserRow).order_by(UserRow.created_at, UserRow.name)))


def _change(store: Store, name: str, **fields) -> UserRow:
    with store.session.begin() as s:
        row = s.get(UserRow, name)
        if row is None:
            raise NotFound(f"no user {name!r}")
        for key, value in fields.items():
            setattr(row, key, value)
        return row


def disable(store: Store, name: str) -> UserRow:
    return _change(store, name, disabled=True)


def set_role(store: Store, name: str, role: str) -> UserRow:
    return _change(store, name, role=checked_role(role))


def set_quota(store: Store, name: str, max_jobs: int | None | EllipsisType = ..., **others: int | None) -> UserRow:
    """Set the user's quotas named (``max_jobs`` and QUOTA_FIELDS' others; None: the server's
    default; 0: no cap); those not named stay as they are."""
    changes = dict(others) if max_jobs is ... else {"max_jobs": max_jobs, **others}
    for field, value in changes.items():
        if field not in QUOTA_FIELDS:
            raise TypeError(f"no quota {field!r}")
        if value is not None and value < 0:
            raise InvalidInput(f"a quota of {value} {QUOTA_FIELDS[field]}: give 0 (no cap) or more")
    return _change(store, name, **changes)


def set_password(store: Store, name: str, password: str) -> UserRow:
    if len(password) < 8:
        raise InvalidInput("a password should have at least 8 characters")
    return _change(store, name, password_hash=hash_password(password))


def new_token(store: Store, name: str, token_name: str = "api", secret: str | None = None) -> str:
    """A new personal token of user ``name``: its secret, returned once (only its hash is kept)."""
    get_user(store, name)
    secret = secret or secrets.token_urlsafe(24)
    with store.session.begin() as s:
        s.add(TokenRow(user=name, name=token_name, digest=digest(secret), created_at=time.time()))
    return secret


def list_tokens(store: Store, name: str) -> list[TokenRow]:
    with store.session() as s:
        return list(s.scalars(select(TokenRow).where(TokenRow.user == name).order_by(TokenRow.id)))


def revoke_token(store: Store, name: str, token_id: int) -> None:
    with store.session.begin() as s:
        row = s.get(TokenRow, token_id)
        if row is None or row.user != name:
            raise NotFound(f"user {name!r} has no token {token_id}")
        row.revoked = True


def actor_of(row: UserRow | None) -> Actor | None:
    if row is None or row.disabled or row.role not in ROLES:
        return None
    return Actor(row.name, row.role)


def first_admin(store: Store) -> UserRow | None:
    query = (select(UserRow).where(UserRow.role == "admin", UserRow.disabled.is_(False))
             .order_by(UserRow.created_at, UserRow.name).limit(1))
    with store.session() as s:
        return s.scalars(query).first()


def resolve(store: Store, given: str, server_token: str) -> Actor | None:
    """The user a bearer token names: the server's token is the first admin's; a personal token
    its user's, unless revoked or the user is disabled. None: no one."""
    if server_token and hmac.compare_digest(given.encode(), server_token.encode()):
        return actor_of(first_admin(store))
    with store.session() as s:
        token = s.scalars(select(TokenRow).where(TokenRow.digest == digest(given))).first()
        if token is None or token.revoked:
            return None
        return actor_of(s.get(UserRow, token.user))


def bootstrap(store: Store, server_token: str, keep_token: bool) -> None:
    """Make the first admin when the home has no admin (``keep_token``: store the server's token
    as its personal token: a TRAINYARD_AUTH_TOKEN chosen by the operator, kept across restarts),
    and give the first admin the jobs that have no owner."""
    if not any(row.role == "admin" for row in list_users(store)):
        try:
            add_user(store, FIRST_ADMIN, "admin")
            if keep_token and server_token:
                new_token(store, FIRST_ADMIN, "server token", secret=server_token)
        except Conflict:  # another process of the same home made it first
            pass
    admin = first_admin(store)
    with store.session() as s:  # looked for first: a read-only home that is up to date still opens
        ownerless = s.scalars(select(Job.id).where(Job.owner.is_(None)).limit(1)).first()
    if admin is not None and ownerless is not None:
        with store.session.begin() as s:
            s.execute(update(Job).where(Job.owner.is_(None)).values(owner=admin.name)
                      .execution_options(synchronize_session=False))


def hash_password(password: str) -> str:
    from pwdlib import PasswordHash  # argon2 with the library's recommended parameters

    return PasswordHash.recommended().hash(password)


def check_password(store: Store, name: str, password: str) -> Actor | None:
    """The user when ``password`` is theirs and they may sign in; None otherwise."""
    from pwdlib import PasswordHash

    with store.session() as s:
        row = s.get(UserRow, name)
    if row is None or row.password_hash is None:
        PasswordHash.recommended().hash(password)  # as slow as a real check: no timing tells names
        return None
    if not PasswordHash.recommended().verify(password, row.password_hash):
        return None
    return actor_of(row)
