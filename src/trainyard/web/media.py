"""How a route that answers a file or a stream documents its media type in /openapi.json.

FastAPI documents every route as answering JSON unless told otherwise, so a PNG or an event
stream showed up as ``application/json`` with an empty schema. ``response_class=Response``
(whose media type is unset) drops that default, and ``responses`` names the real one.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response


def answers(media_type: str, description: str) -> dict[str, Any]:
    """Keyword arguments for a route decorator: its 200 answer is `media_type`, not JSON."""
    return {"response_class": Response,
            "responses": {200: {"description": description, "content": {media_type: {}}}}}


PNG = answers("image/png", "A PNG image.")
EVENT_STREAM = answers("text/event-stream", "Server-Sent Events: one event per line of the job's events.jsonl.")
