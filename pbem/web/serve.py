"""Running the web app: uvicorn on the configured (or given) address.

uvicorn's access log is off: it would write every path, and a private page's path
is its secret. The app logs each request itself, with such tokens cut out
(pbem.text.links.redact).
"""

from __future__ import annotations

import logging

import uvicorn

from pbem.config import Settings
from pbem.web.app import create_app

log = logging.getLogger("pbem.web")


def serve(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    logging.getLogger("alembic").setLevel(logging.WARNING)   # its schema check is not news
    app = create_app(settings)
    host = host or settings.web.host
    port = settings.web.port if port is None else port
    if not settings.web.secret:
        log.warning("no [web] secret (or PBEM_WEB_SECRET): private pages are off")
    log.info("pbem web: serving the game pages on http://%s:%s/", host, port)
    uvicorn.run(app, host=host, port=port, access_log=False, log_config=None,
                server_header=False, proxy_headers=True)
