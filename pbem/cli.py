"""The `pbem` command line: serve, tick, admin, export, db, verify, web, demo, dkim, oauth,
config, completion.

The top of the shell: it may import every module of pbem; nothing imports it. What
`pbem db` does is pbem.cli_database's.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from sqlmodel import Session

from pbem import __version__
from pbem.cli_database import cmd_db
from pbem.completion import SHELLS, script
from pbem.config import (
    ConfigError,
    command_settings,
    effective_config,
    find_config,
    read_config,
)
from pbem.demo.game import run_demo
from pbem.games.records import find_game
from pbem.kinds import DEFAULT_KIND, KINDS, Demo
from pbem.kinds.verify import check_record
from pbem.runner.logformat import FORMATS
from pbem.runner.logformat import set_up as set_up_logging
from pbem.runner.server import Server, utc_now
from pbem.services.export import export_json
from pbem.services.export import schema as joined_schema
from pbem.services.health import server_status
from pbem.store import db
from pbem.store.backup import BackupError
from pbem.store.paths import packaged_dir
from pbem.text.errors import Refusal
from pbem.text.usertext import shown
from pbem.web import serve as serve_web
from pbem.web.database import DatabaseNotReady, open_read_only


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    return command_settings(args.config)


def cmd_config_check(args: argparse.Namespace) -> int:
    """`pbem config check`: every mistake of the config, or the settings pbem runs with
    (defaults filled in, the environment's overrides applied, secrets masked)."""
    path = find_config(args.config, os.environ)
    if path is None:
        command_settings(None)   # says where it looked, unless a pbem.db is here
    loaded = read_config(path)
    if loaded.settings is None:
        raise loaded.error()
    print(effective_config(loaded), end="")
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    """`pbem completion SHELL`: the shell's completion script for this command line."""
    print(script(args.shell, build_parser()), end="")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    Server(_settings(args)).serve()
    return 0


def cmd_tick(args: argparse.Namespace) -> int:
    server = Server(_settings(args))
    try:
        report = server.tick()
    finally:
        server.close()   # LOGOUT and QUIT what the tick kept open for a next one
    print(f"tick: {report}")
    return 0


def cmd_admin(args: argparse.Namespace) -> int:
    server = Server(_settings(args))
    try:
        for line in server.referee.admin(args.words):
            print(shown(line))   # a player's name with an ESC must not drive the terminal
    except Refusal as exc:
        print(f"error: {shown(str(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:   # a bug: the referee noted what failed and what was told
        notes = getattr(exc, "__notes__", None)
        if not notes:
            raise
        print(f"error: {shown(notes[-1])}", file=sys.stderr)
        return 1
    return 0


def cmd_oauth(args: argparse.Namespace) -> int:
    """The referee's first OAuth2 refresh token, written to a token file for pbem alone,
    and the pbem.toml lines that use it (docs/providers.md)."""
    from pbem.mail.oauth import OAuthRefused, google_consent, microsoft_consent, write_token_file
    try:
        if args.provider == "microsoft":
            refresh = microsoft_consent(args.client_id, args.tenant, print)
            lines = ['provider = "outlook"', f'oauth_client_id = "{args.client_id}"',
                     f'oauth_tenant = "{args.tenant}"']
            data = {"refresh_token": refresh}
        else:
            refresh = google_consent(args.client_id, args.client_secret, args.port, print)
            lines = ['provider = "gmail"', f'oauth_client_id = "{args.client_id}"']
            data = {"refresh_token": refresh, "client_secret": args.client_secret}
    except OAuthRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    token_file = Path(args.token_file).resolve()
    write_token_file(str(token_file), data)
    print(f"\nThe refresh token is in {token_file} (readable by you alone: keep it so, and "
          "give it to the user pbem serve runs as).\nPut this in pbem.toml, under [imap] "
          "(and [smtp] takes it from there):\n")
    print("\n".join([*lines, f'username = "{args.username}"', 'auth = "oauth2"',
                     f'oauth_token_file = "{token_file}"']))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    server = Server(_settings(args))
    with Session(server.engine) as session:
        try:
            record = export_json(session, find_game(session, args.game))
        except Refusal as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    json.dump(record, sys.stdout, indent=2)
    print()
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        verdict = check_record(json.loads(Path(args.record).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: cannot read {args.record}: {exc}", file=sys.stderr)
        return 2
    for line in verdict.lines:
        print(shown(line))
    return 0 if verdict.ok else 1


def cmd_schema(args: argparse.Namespace) -> int:
    """A JSON schema of schema/ whole: the registered kinds' parts joined to it."""
    names = sorted(p.name for p in packaged_dir("schema").glob("*.schema.json"))
    if args.name not in names:
        print(f"error: no schema {args.name!r}; there are: {', '.join(names)}", file=sys.stderr)
        return 2
    print(json.dumps(joined_schema(args.name), indent=2, ensure_ascii=False))
    return 0


def cmd_web(args: argparse.Namespace) -> int:
    try:
        serve_web(_settings(args), args.host, args.port)
    except DatabaseNotReady as exc:
        print(f"pbem web: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """`pbem status`: how the server is doing, read from the database (pbem.services.health); exit
    status 0 when well, 1 when its last tick is late or mail is stuck, 2 without a
    database to read."""
    settings = _settings(args)
    try:
        status = server_status(open_read_only(settings.database), settings, utc_now())
    except DatabaseNotReady as exc:
        print(f"pbem status: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(status.as_json(), indent=2))
    else:
        print("\n".join(shown(line) for line in status.lines()))
    return 0 if status.healthy else 1


def cmd_demo(args: argparse.Namespace) -> int:
    return run_demo(Path(args.dir) if args.dir else None, seed=args.seed, rules=args.rules,
                    options=args.options)


def cmd_dkim_keygen(args: argparse.Namespace) -> int:
    from pbem.mail import dkim  # cryptography is heavy: loaded for this command only
    return dkim.keygen_command(args.selector, args.domain, args.out, bits=args.bits)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pbem", description="Play-by-email referee for Bluff")
    parser.add_argument("--version", action="version", version=f"pbem {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    parser.add_argument("-c", "--config", help=CONFIG_HELP)
    parser.add_argument("--log-format", choices=FORMATS, default="auto", help=LOG_FORMAT_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        # SUPPRESS: without it the subcommand's default would undo `pbem -c FILE tick`
        p.add_argument("-c", "--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
        return p

    with_config(sub.add_parser("serve", help="run until SIGTERM")).set_defaults(func=cmd_serve)
    with_config(sub.add_parser("tick", help="one full cycle, then exit")).set_defaults(func=cmd_tick)
    p = with_config(sub.add_parser("admin", help="a referee command, e.g. STATUS cup-1"))
    p.add_argument("words", nargs="+")
    p.set_defaults(func=cmd_admin)
    p = with_config(sub.add_parser("export", help="a game's JSON record"))
    p.add_argument("game")
    p.set_defaults(func=cmd_export)
    p = with_config(sub.add_parser("db", help="the database: current, upgrade (its schema), "
                                              "backup"))
    actions = p.add_subparsers(dest="action", required=True)
    with_config(actions.add_parser("current", help="the schema's revision"))
    a = with_config(actions.add_parser("upgrade", help="migrate the schema (backed up first)"))
    a.add_argument("--to", help="upgrade to this revision instead of the newest")
    a = with_config(actions.add_parser("backup", help="a backup, whole while pbem runs"))
    a.add_argument("path", nargs="?", help="the file (default: a new one in [backup] dir)")
    a.add_argument("--run", action="store_true", help="PostgreSQL: run pg_dump")
    with_config(actions.add_parser("prune", help="[retention] now: old mail's text, old "
                                                 ".eml files"))
    for each in actions.choices.values():
        each.set_defaults(func=cmd_db, path=None, to=None, run=False)
        each.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="log more")
    p = sub.add_parser("verify", help="check a finished game's record")
    p.add_argument("record")
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("schema", help="a JSON schema whole, every kind's part joined to it")
    p.add_argument("name", help="e.g. game-record-generic.schema.json, web-api.schema.json")
    p.set_defaults(func=cmd_schema)
    p = with_config(sub.add_parser("web", help="the read-only game pages (HTTP)"))
    p.add_argument("--host", help="address to listen on (default: [web] host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: [web] port, 8080)")
    p.set_defaults(func=cmd_web)
    p = with_config(sub.add_parser("status", help="how the server is doing; exit 1 if unwell"))
    p.add_argument("--json", action="store_true", help="the figures as JSON")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("demo", help="a whole game of robots over the real mail path")
    p.add_argument("--rules", choices=tuple(KINDS), default=DEFAULT_KIND,
                   help="the game kind: " + ", ".join(
                       f"{name} ({(kind.demo or Demo(kind.min_players)).players} robots"
                       + (", the default)" if name == DEFAULT_KIND else ")")
                       for name, kind in KINDS.items()))
    p.add_argument("--options", help="the kind's NEWGAME options, e.g. 'anniversary DICE 3'")
    p.add_argument("--dir", help="where to put the database and the mails (default: a new temp dir)")
    p.add_argument("--seed", type=int, default=None, help="reproducible dice")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("oauth", help="the first OAuth2 refresh token (Microsoft, Google)")
    p.add_argument("provider", choices=("microsoft", "google"))
    p.add_argument("--client-id", required=True, help="the app registered at the provider")
    p.add_argument("--client-secret", default="", help="Google: the Desktop app's secret")
    p.add_argument("--tenant", default="common", help="Microsoft: the directory (tenant) id")
    p.add_argument("--username", required=True, help="the referee mailbox's address")
    p.add_argument("--token-file", default="pbem-oauth.json", help="where the token goes")
    p.add_argument("--port", type=int, default=8765,
                   help="Google: the local port the browser is sent back to")
    p.set_defaults(func=cmd_oauth)
    p = sub.add_parser("dkim", help="DKIM keys for signing outgoing mail")
    keygen = p.add_subparsers(dest="dkim_command", required=True).add_parser(
        "keygen", help="write a new key and print the DNS record to publish")
    keygen.add_argument("--selector", required=True, help="e.g. s1 (the DNS name's first part)")
    keygen.add_argument("--domain", required=True, help="the domain of the server's address")
    keygen.add_argument("--out", help="the key file (default: dkim-SELECTOR.DOMAIN.pem)")
    keygen.add_argument("--bits", type=int, default=2048, choices=(1024, 2048, 3072, 4096))
    keygen.set_defaults(func=cmd_dkim_keygen)
    p = sub.add_parser("config", help="the config file: check")
    p.add_argument("action", choices=("check",),
                   help="check: list every mistake, or print the effective config")
    with_config(p).set_defaults(func=cmd_config_check)
    p = sub.add_parser("completion", help="print the shell completion script: bash, zsh, fish")
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(func=cmd_completion)
    for each in sub.choices.values():   # `pbem tick -v` as well as `pbem -v tick`
        each.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="log more")
    return parser


LOG_FORMAT_HELP = ("text (with the time), journal (journald's priorities, no time) or json "
                   "(a JSON object a line); auto: journal when stderr is the journal's")
CONFIG_HELP = ("pbem.toml (default: $PBEM_CONFIG, else /etc/pbem/pbem.toml, else the "
               "embedded defaults where a pbem.db is in the current folder)")


def quiet_libraries() -> None:
    """The libraries' bookkeeping stays out of the log: Alembic's dozen lines at start,
    aiosmtpd's ("mail.log") five a connection to the listener, APScheduler's two a poll.
    APScheduler's warnings too: a poll never misses now (pbem.runner.server.poll_scheduler), and
    a start dropped while the tick runs is a line a poll for as long as a big turn's tick
    takes (some forty for one of 10,000 games); its errors still show."""
    for chatty in ("alembic", "mail.log"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    set_up_logging(logging.INFO if args.verbose or args.command in ("serve", "web")
                   else logging.WARNING, args.log_format)
    quiet_libraries()
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except db.SchemaError as exc:
        print(f"database error: {exc}", file=sys.stderr)
        return 2
    except BackupError as exc:
        print(f"backup error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
