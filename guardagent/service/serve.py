"""Run one replica under uvicorn, draining on SIGTERM/SIGINT.

On the signal the replica first drains for `GUARDAGENT_DRAIN_SECONDS`: it reports not ready
(`/readyz` 503 "draining", so a load balancer stops sending) and keeps serving, new
connections included, each answer closing its connection (so kept-alive clients and load
balancers reconnect elsewhere instead of sending on a connection about to close). Then it
stops accepting connections, lets in-flight requests finish for up to
`GUARDAGENT_SHUTDOWN_SECONDS`, and closes its database pools. A second signal ends the drain
at once (a third, during the shutdown, cuts what is in flight: uvicorn's force exit).
"""

from __future__ import annotations

import logging
import math
import time
from types import FrameType

import uvicorn

from guardagent.service.app import create_app
from guardagent.service.connections import head_bounded
from guardagent.service.settings import ServiceSettings

log = logging.getLogger("guardagent.service")


class _DrainingServer(uvicorn.Server):
    """uvicorn's server, with a drain between the signal and the shutdown."""

    def __init__(self, config: uvicorn.Config, drain_seconds: float) -> None:
        super().__init__(config)
        self.drain_seconds = drain_seconds
        self.drain_until: float | None = None
        self._drain_logged = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        app = getattr(self.config, "loaded_app", None)
        while app is not None and not hasattr(app, "state"):  # uvicorn's middleware wrappers
            app = getattr(app, "app", None)
        if app is not None:
            app.state.draining = True
        if self.drain_until is None and self.drain_seconds > 0 and not self.should_exit:
            self.drain_until = time.monotonic() + self.drain_seconds
            return  # logged by the next tick: a signal handler takes no logging lock
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.drain_until is not None and not self._drain_logged:
            self._drain_logged = True
            log.warning(
                "draining for %g s (GUARDAGENT_DRAIN_SECONDS): not ready, still "
                "serving; a second signal stops now",
                self.drain_seconds,
            )
        if self.drain_until is not None and time.monotonic() >= self.drain_until:
            self.should_exit = True
        return await super().on_tick(counter)


def serve(
    host: str, port: int, *, log_level: str = "info", settings: ServiceSettings | None = None
) -> None:
    """Serve until a signal; settings default to the environment's (checked before binding).

    Raises:
        ValueError: a `GUARDAGENT_*` variable that does not parse.
    """
    settings = settings or ServiceSettings.from_env()
    config = server_config(settings, host, port, log_level=log_level)
    _DrainingServer(config, settings.drain_seconds).run()


def server_config(
    settings: ServiceSettings, host: str, port: int, *, log_level: str = "info"
) -> uvicorn.Config:
    """The uvicorn configuration of one replica (also what the tests serve with)."""
    return uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=math.ceil(settings.shutdown_seconds),
        access_log=False,
        http=head_bounded(settings.header_seconds, settings.max_pending_connections),
    )
