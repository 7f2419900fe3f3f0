"""`attention3d` (and `python -m app`): start the server."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import webbrowser
from pathlib import Path

import uvicorn

from app.classroom import cli as classroom_cli


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
    classroom_cli.add_arguments(parser)
    args = parser.parse_args(argv)
    model, source = (args.model, "--model") if args.model else (os.environ.get("ATTENTION_MODEL"), "ATTENTION_MODEL")
    if model:  # checked completely now (config, tokenizer, every tensor's shape): refused with one line
        from app.model.spec import ModelError, read_spec

        try:
            read_spec(Path(model))
        except ModelError as e:
            print(f"attention3d: {source} {model}: {e}", file=sys.stderr)
            sys.exit(2)
        os.environ["ATTENTION_MODEL"] = str(Path(model).resolve())  # read by app.main.create_app
    teacher_link = classroom_cli.configure(args)  # prints the teacher link
    if args.open:  # the teacher link, as Jupyter opens its own: this tab may open rooms
        threading.Timer(1.0, webbrowser.open, [teacher_link]).start()
    # no per-message deflate: the classroom's messages are ~200 bytes, and compressing each copy for
    # every follower cost a quarter of the server's CPU per change (bench.rooms)
    uvicorn.run("app.main:app", host=args.host, port=args.port, ws_per_message_deflate=False, workers=args.workers)


if __name__ == "__main__":
    main()
