"""`attention3d` (and `python -m app`): start the server."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any

import uvicorn

from app.classroom import cli as classroom_cli
from app.web import server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="attention3d", description="Serve Attention, in 3D.")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 serves the LAN)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--open", action="store_true", help="open the page in a browser once the server is up")
    parser.add_argument(
        "--model",
        metavar="PATH",
        help="the model for sentences: a local BERT, GPT-2 or Llama model directory, or a Llama .gguf file "
        "(default all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--ssl-certfile", metavar="PATH", help="serve HTTPS with this certificate (PEM; with --ssl-keyfile)"
    )
    parser.add_argument("--ssl-keyfile", metavar="PATH", help="the certificate's private key (PEM)")
    classroom_cli.add_arguments(parser)
    args = parser.parse_args(argv)
    tls = _tls(args.ssl_certfile, args.ssl_keyfile)
    model, source = (args.model, "--model") if args.model else (os.environ.get("ATTENTION_MODEL"), "ATTENTION_MODEL")
    if model:  # checked completely now (config, tokenizer, every tensor's shape and numbers): refused with one line
        from app.model.spec import ModelError, check_model

        try:
            check_model(Path(model))
        except ModelError as e:
            print(f"attention3d: {source} {model}: {e}", file=sys.stderr)
            sys.exit(2)
        os.environ["ATTENTION_MODEL"] = str(Path(model).resolve())  # read by app.main.create_app
    try:
        options = server.uvicorn_options()  # the LAN limits, read from the environment
    except ValueError as e:
        print(f"attention3d: {e}", file=sys.stderr)
        sys.exit(2)
    teacher_link = classroom_cli.configure(args)  # the teacher link: to a terminal, else to a 0600 file
    if args.open:  # the teacher link, as Jupyter opens its own: this tab may open rooms
        threading.Timer(1.0, webbrowser.open, [teacher_link]).start()
    server.raise_open_files_limit()  # every socket is a file: the common soft limit of 1,024 is too few
    uvicorn.run("app.main:app", host=args.host, port=args.port, workers=args.workers, **tls, **options)


def _tls(certfile: str | None, keyfile: str | None) -> dict[str, Any]:
    """uvicorn's TLS options, or {} for plain HTTP; exit 2 with one line when they are unusable."""
    if not certfile and not keyfile:
        return {}
    if not (certfile and keyfile):
        print("attention3d: HTTPS needs both --ssl-certfile and --ssl-keyfile", file=sys.stderr)
        sys.exit(2)
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as e:
        print(f"attention3d: --ssl-certfile/--ssl-keyfile cannot be used: {e}", file=sys.stderr)
        sys.exit(2)
    return {"ssl_certfile": certfile, "ssl_keyfile": keyfile}


if __name__ == "__main__":
    main()
