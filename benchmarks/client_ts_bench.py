"""The TypeScript client (packages/client-ts) against a bare ``fetch`` of the same endpoint,
from Node, side by side: a page read and an append through convostore-server on SQLite.

    .venvs/server/bin/python benchmarks/client_ts_bench.py [--rounds 20] [--calls 50]

This process starts the server (one worker, no access log) on a fresh SQLite file, with a
user's token, and runs ``benchmarks/client_ts_bench.mjs`` (the measurements) under Node; the
client must be built (``make install-ts``, then ``npm run build`` in packages/client-ts, which
``make bench-ts`` does).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from convostore_server import new_token
from report import markdown_report
from server_bench import BIN, serve

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    with markdown_report("TypeScript client benchmarks", ["convostore-server"]):
        args = parser.parse_args()  # after markdown_report took --markdown
        with tempfile.TemporaryDirectory() as tmp:
            token, line = new_token("user:u_bench")
            tokens = Path(tmp) / "tokens.txt"
            tokens.write_text(line + "\n")
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            server = [str(BIN / "convostore-server"), "--url", url, "--tokens", str(tokens)]
            with serve(server, {}) as base:
                script = HERE / "client_ts_bench.mjs"
                measured = [str(args.rounds), str(args.calls)]
                done = subprocess.run(
                    ["node", str(script), base, token, *measured],
                    check=False,
                    capture_output=True,
                    text=True,
                )
                if done.returncode != 0:
                    sys.exit(f"client_ts_bench.mjs failed:\n{done.stderr}")
                print("SQLite file (WAL), one uvicorn worker:\n")
                print(done.stdout.strip())


if __name__ == "__main__":
    main()
