"""``esrag serve`` and ``esrag mcp``: serve the index over HTTP or the Model Context Protocol with
one warm :class:`esrag.service.SearchService`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.markup import escape

from esrag import app
from esrag.app import open_store
from esrag.cli.common import err, handle_errors, json_option, print_json
from esrag.config import Settings, load_settings
from esrag.errors import EsragError
from esrag.serve.security import KeyRing
from esrag.serve.sync import SyncRunner
from esrag.service import SearchService


def server_options(f: Callable) -> Callable:
    """``--host``, ``--port`` and ``--api-key`` shared by ``serve`` and ``mcp --http``."""
    options = [
        click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help="Address to bind; any non-loopback address needs an API key or keys per corpus ([serve.keys]).",
        ),
        click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="TCP port."),
        click.option(
            "--api-key",
            envvar="ESRAG_SERVE_API_KEY",
            help="Require this key (Authorization: Bearer KEY or X-API-Key: KEY) on every request (default: ESRAG_SERVE_API_KEY).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _announce(as_json: bool, url: str, store: str, keys: KeyRing) -> None:
    if as_json:
        click.echo(json.dumps({"url": url, "store": store, "api_key_required": keys.required, "keys": keys.names}))
    else:
        named = f"; keys per corpus: {', '.join(keys.names)}" if keys.names else ""
        err.print(f"esrag serving {store} on {url}" + (f" (API key required{named})" if keys.required else ""))


def _keyring(settings: Settings, host: str, api_key: str | None) -> KeyRing:
    """The keys of a server: ``--api-key`` (every corpus) and ``[serve.keys]`` (their corpora).

    Raises:
        ConfigError: a non-loopback ``host`` with neither (:func:`esrag.serve.security.resolve_api_key`).
    """
    from esrag.serve.security import resolve_api_key

    keys = {name: (k.sha256, k.corpora, k.sync) for name, k in settings.serve.keys.items()}
    return KeyRing(resolve_api_key(host, api_key, keys_configured=bool(keys)), keys)


@contextmanager
def _service(settings: Settings) -> Iterator[SearchService]:
    """``with _service(settings) as service:`` the process's warm :class:`esrag.service.SearchService`
    (model loaded before listening when the index exists; an unreachable store is reported and
    served anyway); its store is closed when the block ends."""
    with open_store(settings, read_only=True) as store:  # a missing index is never created (docs/cli.md "Read-only commands")
        service = SearchService(settings, store)
        try:
            if store.meta() is not None:
                service.warm()
            else:
                err.print(
                    f"[yellow]warning[/yellow]: {escape(app.nothing_indexed(settings))}; serving anyway: searches answer "
                    "409 (HTTP) or a tool error (MCP) until then, /health says so",
                    soft_wrap=True,
                )
        except EsragError as exc:  # serve anyway: /health and the tools say why, and it recovers with the store
            err.print(f"[yellow]warning[/yellow]: {escape(str(exc))}")
        yield service


@contextmanager
def _syncing(settings: Settings, service: SearchService, interval: float | None) -> Iterator[SyncRunner | None]:
    """``with _syncing(settings, service, --sync-interval) as syncer:`` the server's sync thread
    (:class:`esrag.serve.sync.SyncRunner`; None without ``[sources]``), every ``interval``
    seconds (default ``[serve] sync_interval``; 0 = only ``POST /sync/NAME``), stopped at the end."""
    from esrag.serve.http import serve_log
    from esrag.serve.sync import SyncRunner

    if not settings.sources:
        yield None
        return
    serve_log()  # before the thread: its first round (at start) is logged too
    every = settings.serve.sync_interval if interval is None else interval
    syncer = SyncRunner(settings, service.swap_gate, every).start()
    try:
        yield syncer
    finally:
        syncer.stop()


def sync_interval_option(f: Callable) -> Callable:
    """``--sync-interval SECONDS`` of ``serve`` and ``mcp --http``."""
    from esrag.config import MIN_SYNC_INTERVAL, check_sync_interval

    def checked(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
        try:
            return None if value is None else check_sync_interval(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option(
        "--sync-interval",
        type=float,
        default=None,
        callback=checked,
        help=f"Sync every [sources.NAME] every SECONDS (0 = never, else at least {MIN_SYNC_INTERVAL:g}) while serving, the first at "
        "start (default: [serve] sync_interval).",
    )(f)


@click.command()
@server_options
@click.option("--cors-origin", "cors_origins", multiple=True, help="Allow browser calls from this origin (repeatable; default: CORS off).")
@sync_interval_option
@click.option("--json", "as_json", is_flag=True, help="Print the address as one JSON line on stdout before serving.")
@handle_errors
def serve(host: str, port: int, api_key: str | None, cors_origins: tuple[str, ...], sync_interval: float | None, as_json: bool) -> None:
    """Serve the index over HTTP: JSON API (/search, /ask, /pages/PATH, /corpora, /health, /sync; schema at
    /openapi.json) and a search page at /. One warm model and store connection for all requests;
    with [sources.NAME], syncs them on an interval or on POST /sync/NAME while answering.
    SIGTERM or Ctrl-C stops it gracefully."""
    from esrag.serve.http import create_app
    from esrag.serve.http import serve as run

    settings = load_settings()
    keys = _keyring(settings, host, api_key)
    with _service(settings) as service, _syncing(settings, service, sync_interval) as syncer:
        app = create_app(service, api_key=keys, cors_origins=list(cors_origins), syncer=syncer)
        run(app, host, port, on_listen=lambda bound: _announce(as_json, f"http://{host}:{bound}/", service.store.name, keys))


@click.command()
@click.option("--http", "over_http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@server_options
@sync_interval_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="With --http: print the endpoint as one JSON line on stdout before serving (over stdio, stdout is the protocol's).",
)
@click.option(
    "--session-memory",
    is_flag=True,
    help="search_docs and get_page leave out sections already sent in the same MCP session and name them; "
    "resend=true sends them again (default: [mcp] session_memory, else off).",
)
@handle_errors
def mcp(
    over_http: bool, host: str, port: int, api_key: str | None, sync_interval: float | None, as_json: bool, session_memory: bool
) -> None:
    """Serve the index to agents over the Model Context Protocol (stdio by default): read-only
    tools search_docs, get_page, list_corpora and resolve_library."""
    from esrag.serve import mcp as mcp_server

    settings = load_settings()
    memory = session_memory or settings.mcp.session_memory
    keys = _keyring(settings, host, api_key) if over_http else KeyRing()
    with _service(settings) as service:
        if not over_http:
            mcp_server.run_stdio(service, session_memory=memory)
            return
        from esrag.serve.http import serve as run

        with _syncing(settings, service, sync_interval):  # on its interval only (the webhook is esrag serve's)
            app = mcp_server.http_app(service, host, keys, session_memory=memory)
            run(app, host, port, on_listen=lambda bound: _announce(as_json, f"http://{host}:{bound}/mcp", service.store.name, keys))


@click.group()
def keys() -> None:
    """Keys of esrag serve / esrag mcp --http that may read only some corpora ([serve.keys.NAME])."""


@keys.command("add")
@click.argument("name")
@click.option("--corpus", "corpora", multiple=True, required=True, help="A corpus the key may read (repeatable).")
@click.option("--sync", "sync", multiple=True, help="A [sources.NAME] the key may sync with POST /sync/NAME of esrag serve (repeatable).")
@json_option
@handle_errors
def keys_add(name: str, corpora: tuple[str, ...], sync: tuple[str, ...], as_json: bool) -> None:
    """Make a key NAME that may read only the --corpus corpora: print it once (stdout) and write
    its SHA-256 and corpora as [serve.keys.NAME] at the end of the settings file (esrag.toml or
    ESRAG_CONFIG). Refused when NAME exists."""
    from esrag.config import config_path
    from esrag.serve.security import add_key

    path = config_path()
    key = add_key(name, list(corpora), path, sync=sync)
    if as_json:
        print_json(
            {"name": name, "key": key, "corpora": list(dict.fromkeys(corpora)), "config": str(path)}
            | ({"sync": list(dict.fromkeys(sync))} if sync else {})
        )
        return
    click.echo(key)
    err.print(
        f"key {escape(name)} written to {escape(str(path))} (its SHA-256 only); it is shown this once: "
        "give it as Authorization: Bearer KEY or X-API-Key: KEY",
        soft_wrap=True,
    )
