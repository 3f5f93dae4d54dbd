"""Worker processes for ``convostore-server --workers N``: uvicorn's supervisor, with the
reason a worker was replaced logged, and time for a worker to start on a busy machine.

uvicorn's supervisor pings each worker every half second and kills one that does not answer
within ``timeout_worker_healthcheck`` seconds (5 by default). A worker answers only once its
process has started Python and imported uvicorn; on a loaded machine that can take longer, and
the worker is killed before it could answer, again and again, logged as "died" and nothing
more. The command gives workers ``DEFAULT_WORKER_TIMEOUT`` seconds (``--worker-timeout``), and
says why each one went.
"""

from __future__ import annotations

import logging
import signal

from uvicorn.supervisors.multiprocess import Multiprocess

log = logging.getLogger("uvicorn.error")

DEFAULT_WORKER_TIMEOUT = 60
"""Seconds a worker may take to answer the supervisor's health check (uvicorn's default: 5)."""


def _ended(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = (
            " (the kernel's out-of-memory killer sends it too)" if -code == signal.SIGKILL else ""
        )
        return f"was killed by {name}{hint}"
    return f"exited with code {code}"


class Supervisor(Multiprocess):
    """uvicorn's ``Multiprocess``, logging why it replaces a worker."""

    def keep_subprocess_alive(self) -> None:
        before = list(self.processes)
        running = [p.process.is_alive() for p in before]
        super().keep_subprocess_alive()
        for process, was_running in zip(before, running, strict=True):
            if process in self.processes:
                continue
            if was_running and process.exitcode == -signal.SIGKILL:  # killed by the check
                why = (
                    "did not answer the supervisor's health check within"
                    f" {self.config.timeout_worker_healthcheck:g} s (still starting on a busy"
                    " machine, or stuck), so it was killed"
                )
            else:
                why = _ended(process.exitcode)
            log.warning("worker process [%s] %s; a new one replaces it", process.pid, why)
