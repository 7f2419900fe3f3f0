"""`attention3d` (and `python -m app`): start the server."""

from __future__ import annotations

import argparse
import os
import threading
import webbrowser
from pathlib import Path

import uvicorn


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="attention3d", description="Serve Attention, in 3D.")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 serves the LAN)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--open", action="store_true", help="open the page in a browser once the server is up")
    parser.add_argument(
        "--model", metavar="PATH", help="a local BERT or GPT-2 model directory for sentences (default all-MiniLM-L6-v2)"
    )
    args = parser.parse_args(argv)
    if args.model:
        from app.model.spec import ModelError, read_spec

        try:
            read_spec(Path(args.model))
        except ModelError as e:
            parser.error(f"--model: {e}")
        os.environ["ATTENTION_MODEL"] = str(Path(args.model).resolve())  # read by app.main.create_app
    if args.open:
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        threading.Timer(1.0, webbrowser.open, [f"http://{shown}:{args.port}/"]).start()
    uvicorn.run("app.main:app", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
