"""Run one replica under uvicorn, draining on SIGTERM/SIGINT.

On the signal the replica reports not ready (`/readyz` 503, so a load balancer stops sending),
stops accepting connections, lets in-flight requests finish for up to
`GUARDAGENT_SHUTDOWN_SECONDS`, then closes its database pools.
"""

from __future__ import annotations

import math
from types import FrameType

import uvicorn

from guardagent.service.app import create_app
from guardagent.service.connections import head_bounded
from guardagent.service.settings import ServiceSettings


class _DrainingServer(uvicorn.Server):
    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        app = getattr(self.config, "loaded_app", None)
        while app is not None and not hasattr(app, "state"):  # uvicorn's middleware wrappers
            app = getattr(app, "app", None)
        if app is not None:
            app.state.draining = True
        super().handle_exit(sig, frame)


def serve(host: str, port: int, *, log_level: str = "info",
          settings: ServiceSettings | None = None) -> None:  # fmt: skip
    """Serve until a signal; settings default to the environment's (checked before binding).

    Raises:
        ValueError: a `GUARDAGENT_*` variable that does not parse.
    """
    settings = settings or ServiceSettings.from_env()
    _DrainingServer(server_config(settings, host, port, log_level=log_level)).run()


def server_config(settings: ServiceSettings, host: str, port: int, *,
                  log_level: str = "info") -> uvicorn.Config:  # fmt: skip
    """The uvicorn configuration of one replica (also what the tests serve with)."""
    return uvicorn.Config(
        create_app(settings), host=host, port=port, log_level=log_level, lifespan="on",
        timeout_graceful_shutdown=math.ceil(settings.shutdown_seconds), access_log=False,
        http=head_bounded(settings.header_seconds, settings.max_pending_connections),
    )  # fmt: skip
