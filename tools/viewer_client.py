"""An open page without a browser, for measuring what watching costs (`phalanx train --viewer`,
`phalanx view`) on a machine that has none: connects to the viewer's port as viser's web client
does (its subprotocol, viser-vVERSION) and reads every message the server sends, until the
server closes, `--seconds` pass or SIGTERM comes. Prints "connected" once it is, then one JSON
line: messages, bytes, seconds connected.

    python tools/viewer_client.py --port 8080 --seconds 120 &
    phalanx train cartpole --viewer --viewer-port 8080
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from dataclasses import dataclass

import viser
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


@dataclass
class Received:
    messages: int = 0
    bytes: int = 0
    connected_at: float | None = None


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def read(host: str, port: int, end: float, received: Received) -> None:
    """Connects (waiting for the server until `end`) and counts what arrives until `end`."""
    while time.monotonic() < end:
        try:
            page = connect(f"ws://{host}:{port}", subprotocols=[f"viser-v{viser.__version__}"])
        except OSError:  # not serving yet (the env is being built)
            time.sleep(0.5)
            continue
        received.connected_at = time.monotonic()
        print("connected", flush=True)
        with page:
            try:
                while time.monotonic() < end:
                    try:
                        message = page.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    received.messages, received.bytes = received.messages + 1, received.bytes + len(message)
            except ConnectionClosed:  # the run ended
                pass
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--seconds", type=float, default=60.0, help="from the start, waiting for the server included")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    received = Received()
    try:
        read(args.host, args.port, time.monotonic() + args.seconds, received)
    except KeyboardInterrupt:  # SIGTERM: what arrived so far
        pass
    seconds = 0.0 if received.connected_at is None else time.monotonic() - received.connected_at
    print(json.dumps({"messages": received.messages, "bytes": received.bytes, "seconds": round(seconds, 1)}))


if __name__ == "__main__":
    main()
