"""An open page without a browser, for measuring what watching costs (`phalanx train --viewer`,
`phalanx view`) on a machine that has none: connects to the viewer's port as viser's web client
does (its subprotocol, viser-vVERSION) and reads every message the server sends, until the
server closes or `--seconds` pass; prints one JSON line (messages, bytes, seconds connected).

    python tools/viewer_client.py --port 8080 --seconds 120 &
    phalanx train cartpole --viewer --viewer-port 8080
"""

from __future__ import annotations

import argparse
import json
import time

import viser
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--seconds", type=float, default=60.0, help="from the start, waiting for the server included")
    args = parser.parse_args()
    end = time.monotonic() + args.seconds
    messages = size = 0
    connected_at = None
    while time.monotonic() < end:
        try:
            page = connect(f"ws://{args.host}:{args.port}", subprotocols=[f"viser-v{viser.__version__}"])
        except OSError:  # not serving yet (the env is being built)
            time.sleep(0.5)
            continue
        connected_at = time.monotonic()
        with page:
            try:
                while time.monotonic() < end:
                    try:
                        message = page.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    messages, size = messages + 1, size + len(message)
            except ConnectionClosed:  # the run ended
                pass
        break
    seconds = 0.0 if connected_at is None else time.monotonic() - connected_at
    print(json.dumps({"messages": messages, "bytes": size, "seconds": round(seconds, 1)}))


if __name__ == "__main__":
    main()
