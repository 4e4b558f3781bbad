"""Start the background worker so that the hook can return at once (a double fork).

The worker runs in a new session (`setsid`: no controlling terminal, its own process
group, so Claude Code exiting or a Ctrl-C in its terminal does not reach it) with stdin,
stdout and stderr on /dev/null and no other inherited descriptor. The last point is what
lets the hook return: Claude Code reads the hook's stdout and stderr pipes until they
close, and a child still holding them would keep the hook "running" until it finished.

The worker is started from a short-lived intermediate child, so it is re-parented to
init at once: whoever called `detach` (the hook, an orchestrator's long-lived process)
never has to reap it and never leaves a zombie behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def worker_argv(argv: list[str]) -> list[str]:
    """The worker's command line: this interpreter, `scorer.cli.hook_worker ARGV…` (the
    worker's own entry point, which loads no more than the job needs)."""
    return [sys.executable, "-m", "scorer.cli.hook_worker", *argv]


def _spawn(command: list[str], cwd: Path | None) -> int:
    """One level of detachment (where there is no fork)."""
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        cwd=cwd,
    )
    return proc.pid


def _become_worker(command: list[str], cwd: Path | None) -> None:
    """In the grandchild: stdio on /dev/null, no other descriptor, then exec the worker."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1 << 16)
        if cwd is not None:
            os.chdir(cwd)
        os.execv(command[0], command)
    finally:
        os._exit(127)  # only reached when exec failed


def detach(argv: list[str], *, cwd: Path | None = None) -> int:
    """Run the worker for `argv` detached from this process; returns the worker's pid.

    The caller waits only for the intermediate child to fork (a millisecond), not for
    the worker's interpreter to start.

    Raises:
        OSError: The worker could not be started.
    """
    command = worker_argv(argv)
    if not hasattr(os, "fork"):  # not POSIX: one level of detachment is all there is
        return _spawn(command, cwd)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the intermediate: a new session, fork the worker, report, vanish
        try:
            os.close(read_end)
            os.setsid()
            worker = os.fork()
            if worker == 0:
                _become_worker(command, cwd)
            os.write(write_end, str(worker).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reported = pipe.read()
    os.waitpid(child, 0)
    if not reported:
        raise OSError("could not start the scoring worker (fork failed)")
    return int(reported)
