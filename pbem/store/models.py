"""The database tables (sqlmodel). Alembic migrations under schema/ create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, ForeignKey, Index, Integer, LargeBinary, UniqueConstraint, text
from sqlmodel import Field, SQLModel


class Game(SQLModel, table=True):
    # the web pages list games by status, by deadline or by their end (schema 0006)
    __table_args__ = (Index("ix_game_status_deadline", "status", "deadline"),
                      Index("ix_game_status_ended_at", "status", "ended_at"))
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    kind: str                          # the game kind's name (pbem.kinds: RULES <kind>)
    rules_json: str
    seed_hex: str                      # secret until the game is over
    commitment: str
    status: str = "new"                # new | running | paused | over | cancelled
    turn: int = 0                      # the turn being played; 0 before the start
    turn_hours: float | None = None    # None: no deadline, the turn waits for all orders
    deadline: datetime | None = None
    # the referee's desk options (pbem.kinds.options.GameOptions as JSON): deadline hour,
    # grace, reminder lead, missed-turn limit, policy, sign-up, auto-start, wait, ...
    options_json: str = "{}"
    turn_started_at: datetime | None = None
    paused_left_seconds: float | None = None   # time left on the deadline when paused
    reminded_turn: int = 0             # the last turn whose reminders went out
    grace_until: datetime | None = None  # set when the deadline passed and grace began
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None


class Player(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("game_id", "email"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    entrant: int                       # sign-up order, 1-based
    email: str = Field(index=True)     # known_address, running_games_of: every mail
    name: str
    seat: int | None = None            # drawn at the start
    key: str                           # the order key shown in every report
    key_hash: str = ""                 # sha256 of the key, for checks that need no plaintext
    active: bool = True                # False once replaced or gone
    default_order: str | None = None   # standing order for a missed turn: CHALLENGE|RAISE|ROBOT
    missed_turns: int = 0              # turns missed in a row
    absent_days_used: float = 0.0      # vacation days already granted in this game
    timezone: str | None = None        # IANA name the player reads times in (TIMEZONE)
    language: str | None = None        # en | de | cs (LANGUAGE); None: the game's


class Move(SQLModel, table=True):
    """An accepted, applied move: the game's record."""

    # (game_id, turn, seat) serves every read by game_id: no index on game_id alone (0018)
    __table_args__ = (UniqueConstraint("game_id", "turn", "seat"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    turn: int
    seat: int
    minigame: int
    move_json: str
    by: str = "player"                 # player | robot | referee
    rerolled_json: str = "[]"
    created_at: datetime


class PendingOrder(SQLModel, table=True):
    """An order received for the turn in play, applied when the turn resolves."""

    # (game_id, turn, seat) serves every read by game_id: no index on game_id alone (0018)
    __table_args__ = (UniqueConstraint("game_id", "turn", "seat"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    turn: int
    seat: int
    move_json: str
    by: str = "player"
    inbound_id: int | None = Field(default=None, foreign_key="inbound_mail.id")
    created_at: datetime


class InboundMail(SQLModel, table=True):
    __tablename__ = "inbound_mail"
    # a lane's new mail, oldest first: its claim and the giving of lanes (schema 0017)
    __table_args__ = (Index("ix_inbound_mail_new_lane", "lane", "id",
                            postgresql_where=text("status = 'new'"),
                            sqlite_where=text("status = 'new'")),)
    id: int | None = Field(default=None, primary_key=True)
    dedupe_key: str = Field(unique=True)   # Message-ID, else a hash of the bytes
    imap_key: str | None = Field(default=None, unique=True)  # folder/UIDVALIDITY/UID
    source: str                        # imap | smtp | cli
    envelope_from: str | None = None
    # its bytes are a row of inbound_raw (InboundRaw), not a column: see there
    size: int
    truncated: bool = False
    received_at: datetime
    status: str = Field(default="new", index=True)   # new | done | failed | quarantined
    outcome: str | None = None
    processed_at: datetime | None = None
    claimed_by: str | None = None      # the process handling it (a lease, see claimed_at)
    claimed_at: datetime | None = None
    # handling attempts begun (pbem.runner.inbox): one that ends leaves the mail new no more, so
    # a new mail with attempts was cut short (a crash, a kill) that many times
    attempts: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # the game it speaks to, read before it is claimed (0: none; null: not read yet): on
    # PostgreSQL a game's mail is one lane, handled by one worker at a time (pbem.runner.lanes)
    lane: int | None = None
    # when its text was cut to the header, [retention] days after its game (pbem.runner.retention)
    pruned_at: datetime | None = None


class OutboundMail(SQLModel, table=True):
    __tablename__ = "outbound_mail"
    # status then sent_at: the send budget counts the mail sent since a time
    # (pbem.outbox.table.budget_left) by a range of the index, not by every sent mail;
    # a look for the pending mail uses its first column; (game_id, kind) serves every read
    # by game_id: no index on game_id alone (0018); the bounce tokens' index holds the
    # tokens alone (0019): a mail queued without VERP has none and writes no entry
    __table_args__ = (Index("ix_outbound_mail_game_kind", "game_id", "kind"),
                      Index("ix_outbound_mail_status_sent_at", "status", "sent_at"),
                      Index("ix_outbound_mail_bounce_token", "bounce_token",
                            sqlite_where=text("bounce_token IS NOT NULL"),
                            postgresql_where=text("bounce_token IS NOT NULL")))
    id: int | None = Field(default=None, primary_key=True)
    message_id: str = Field(unique=True)
    kind: str                          # report | confirm | error | help | notice
    mail_from: str
    rcpts_json: str
    # its bytes are a row of outbound_body (OutboundBody), not a column: see there
    game_id: int | None = Field(default=None, foreign_key="game.id")
    seat: int | None = None
    turn: int | None = None
    inbound_id: int | None = Field(default=None, foreign_key="inbound_mail.id")
    status: str = "pending"            # pending | sent | failed
    attempts: int = 0
    next_attempt_at: datetime
    last_error: str | None = None
    created_at: datetime
    sent_at: datetime | None = None
    claimed_by: str | None = None      # the process sending it (a lease, see claimed_at)
    claimed_at: datetime | None = None
    # names this mail in the VERP return path bluff+b.<token>@domain (pbem.mail.bounces);
    # none when queued without VERP ([smtp] verp off: pbem.outbox.queue.Origin)
    bounce_token: str | None = None


# A mail's bytes are kept apart from its row (schema 0016): the row is written again by
# each claim, sent mark and finish, and SQLite writes an updated row whole, its mail
# (tens of KB on overflow pages) included; the bytes' row is written once, read when the
# mail is read or sent, cut by retention, and deleted with its mail (ON DELETE CASCADE).


class InboundRaw(SQLModel, table=True):
    """The bytes of a stored mail (inbound_mail), as received (or cut to the header)."""

    __tablename__ = "inbound_raw"
    mail_id: int = Field(sa_column=Column(
        Integer, ForeignKey("inbound_mail.id", ondelete="CASCADE"), primary_key=True))
    raw: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class OutboundBody(SQLModel, table=True):
    """The bytes of a queued mail (outbound_mail), as they are sent."""

    __tablename__ = "outbound_body"
    mail_id: int = Field(sa_column=Column(
        Integer, ForeignKey("outbound_mail.id", ondelete="CASCADE"), primary_key=True))
    raw: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class BounceState(SQLModel, table=True):
    """Bounces of mail to one address (pbem.mail.bounces): a hard bounce marks it failing
    until mail from the address arrives again; soft bounces are counted."""

    __tablename__ = "bounce_state"
    id: int | None = Field(default=None, primary_key=True)
    address: str = Field(unique=True)
    failing: bool = False
    hard_bounces: int = 0
    soft_bounces: int = 0              # since the address last wrote to us
    last_bounce_at: datetime | None = None
    last_reason: str = ""
    # the game, seat and mail of the latest bounce, when it was matched to one
    game_id: int | None = Field(default=None, foreign_key="game.id")
    seat: int | None = None
    message_id: str | None = None
    referee_told_at: datetime | None = None
    report_pending: bool = False       # the next report of game_id says the mail bounced


class Absence(SQLModel, table=True):
    """A player's vacation (ABSENT): deadlines inside it move past it."""

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(index=True)
    starts: datetime
    ends: datetime
    created_at: datetime


class Signup(SQLModel, table=True):
    """A JOIN waiting for the address to confirm it with the mailed code."""

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    email: str                         # the address the code went to
    name: str                          # the player's name; ADDRESS: the old address
    code_hash: str
    # pending | pending-watch | pending-address | confirmed | expired | withdrawn
    status: str = "pending"
    created_at: datetime
    confirmed_at: datetime | None = None
    # the language the JOIN was written in (de, cs; None: English words): the player's then
    language: str | None = None


class TalkMessage(SQLModel, table=True):
    """SAY: table talk, relayed to the players and shown in the next report."""

    __tablename__ = "talk_message"
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    turn: int
    seat: int | None = None            # None: the referee
    name: str
    text: str
    created_at: datetime
    # private press (SAY TO): the one seat it was said to, besides the referee; None: all
    to_seat: int | None = None


class Watcher(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("game_id", "email"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    email: str
    created_at: datetime


class SenderEvent(SQLModel, table=True):
    """What an address did that is rate-limited: failed authentication, answers to strangers."""

    __tablename__ = "sender_event"
    __table_args__ = (Index("ix_sender_event_address_kind_at", "address", "kind", "at"),)
    id: int | None = Field(default=None, primary_key=True)
    address: str = Field(index=True)
    kind: str = Field(index=True)      # auth-failed | stranger-answered | ...
    at: datetime


class ServerState(SQLModel, table=True):
    """Small facts the server keeps between runs (e.g. when it last ran a tick)."""

    __tablename__ = "server_state"
    key: str = Field(primary_key=True)
    value: str


class AuditEntry(SQLModel, table=True):
    """A game's history of referee actions and desk events (rollback keeps undone moves here)."""

    __tablename__ = "audit_entry"
    id: int | None = Field(default=None, primary_key=True)
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    at: datetime
    actor: str
    action: str = Field(index=True)   # counted by kind for `pbem status` (GAME_FAILED)
    detail: str = ""
