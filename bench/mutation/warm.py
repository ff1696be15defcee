"""A warm pytest for mutation testing: import the heavy third-party libraries once, fork per run.

    python warm.py serve SOCKET            # preimports numpy, duckdb, hypothesis, pytest, ...
    python warm.py run SOCKET TIMEOUT ARGS # one pytest run in a fork of the server; exits with its status

cosmic-ray runs its test command once per mutant; most of a run's wall time on a loaded machine
is the interpreter importing numpy, DuckDB and Hypothesis. The server imports none of suanli or
the tests, so each forked child imports them fresh from the (mutated) files on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys


def _serve(path: str) -> None:
    import duckdb  # noqa: F401
    import httpx  # noqa: F401
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest
    import yaml  # noqa: F401

    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    while True:
        conn, _ = srv.accept()
        with conn:
            req = json.loads(conn.makefile().readline())
            pid = os.fork()
            if pid == 0:
                srv.close()
                sys.dont_write_bytecode = True
                os.chdir(req["cwd"])
                sys.path.insert(0, req["cwd"])
                signal.alarm(int(req["timeout"]))
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os._exit(int(pytest.main(req["args"])))
            _, status = os.waitpid(pid, 0)
            rc = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):  # the client was killed (cosmic-ray's timeout)
                conn.sendall(f"{rc}\n".encode())


def _run(path: str, timeout: str, args: list[str]) -> int:
    """Exit 0 when the tests pass, 1 when they fail; without a server (it died), a plain pytest
    run decides, so a dead server never turns a mutant into a false kill."""
    try:
        return _ask(path, timeout, args)
    except OSError:
        import subprocess

        done = subprocess.run([sys.executable, "-m", "pytest", *args], check=False, timeout=float(timeout))
        return 0 if done.returncode == 0 else 1


def _ask(path: str, timeout: str, args: list[str]) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((json.dumps({"cwd": os.getcwd(), "timeout": float(timeout), "args": args}) + "\n").encode())
        rc = int(s.makefile().readline() or "1")
    return 0 if rc == 0 else 1


def main() -> int:
    if sys.argv[1] == "serve":
        _serve(sys.argv[2])
        return 0
    return _run(sys.argv[2], sys.argv[3], sys.argv[4:])


if __name__ == "__main__":
    sys.exit(main())
