"""`pbem web`: read-only web pages of the games (the top shell layer: nothing imports it).

``create_app`` builds the ASGI app (pbem.web.app); ``serve`` runs it with uvicorn.
"""

from __future__ import annotations

from pbem.web.app import create_app
from pbem.web.serve import serve

__all__ = ["create_app", "serve"]
