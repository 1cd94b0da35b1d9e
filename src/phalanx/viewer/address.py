"""Where a viewer page is served: the checks made before anything is built (a port in range and
free, viser installed) and the line that says where to open it."""

from __future__ import annotations

import socket

from rich.console import Console

from phalanx.core.errors import ConfigError


def check_serving(port: int, port_flag: str, who: str) -> None:
    """Raises ConfigError for a port out of range (naming `port_flag`) or, for `who` (the command
    or flag that serves), viser missing."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"must be a port in [0, 65535], got {port}", port_flag)
    try:
        import viser  # noqa: F401 (present?)
    except ImportError:
        raise ConfigError(f"{who} needs viser: pip install 'phalanx[viewer]'") from None


def check_port(host: str, port: int, flag: str = "port") -> None:
    """Raises ConfigError naming `flag` when nothing can listen at host:port (viser would quietly
    take the next free port instead)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            reason = f"{port} is not free on {host} ({error.strerror}); give another, or 0 for any"
            raise ConfigError(reason, flag) from None


def announce(console: Console, host: str, port: int, command: str) -> None:
    """The page's address, and how to reach it from a laptop when this machine is remote."""
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "::1") else host
    console.print(f"{command}: http://{shown}:{port}  (Ctrl-C stops)")
    console.print(
        f"  on a remote machine: ssh -L {port}:localhost:{port} USER@HOST on your laptop, then open http://localhost:{port}"
    )
