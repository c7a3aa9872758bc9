"""The database tables (sqlmodel). Alembic migrations under schema/ create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel


class Game(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    kind: str = "postal"
    rules_json: str
    seed_hex: str                      # secret until the game is over
    commitment: str
    status: str = "new"                # new | running | over | cancelled
    turn: int = 0                      # the turn being played; 0 before the start
    turn_hours: float | None = None    # None: no deadline, the turn waits for all orders
    deadline: datetime | None = None
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None


class Player(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("game_id", "email"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    entrant: int                       # sign-up order, 1-based
    email: str
    name: str
    seat: int | None = None            # drawn at the start
    key: str                           # the order key shown in every report


class Move(SQLModel, table=True):
    """An accepted, applied move: the game's record."""

    __table_args__ = (UniqueConstraint("game_id", "turn", "seat"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    turn: int
    seat: int
    minigame: int
    move_json: str
    by: str = "player"                 # player | robot | referee
    rerolled_json: str = "[]"
    created_at: datetime


class PendingOrder(SQLModel, table=True):
    """An order received for the turn in play, applied when the turn resolves."""

    __table_args__ = (UniqueConstraint("game_id", "turn", "seat"),)
    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    turn: int
    seat: int
    move_json: str
    by: str = "player"
    inbound_id: int | None = Field(default=None, foreign_key="inbound_mail.id")
    created_at: datetime


class InboundMail(SQLModel, table=True):
    __tablename__ = "inbound_mail"
    id: int | None = Field(default=None, primary_key=True)
    dedupe_key: str = Field(unique=True)   # Message-ID, else a hash of the bytes
    imap_key: str | None = Field(default=None, unique=True)  # folder/UIDVALIDITY/UID
    source: str                        # imap | smtp | cli
    envelope_from: str | None = None
    raw: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size: int
    truncated: bool = False
    received_at: datetime
    status: str = Field(default="new", index=True)   # new | done | failed
    outcome: str | None = None
    processed_at: datetime | None = None


class OutboundMail(SQLModel, table=True):
    __tablename__ = "outbound_mail"
    id: int | None = Field(default=None, primary_key=True)
    message_id: str = Field(unique=True)
    kind: str                          # report | confirm | error | help | notice
    mail_from: str
    rcpts_json: str
    raw: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    seat: int | None = None
    turn: int | None = None
    inbound_id: int | None = Field(default=None, foreign_key="inbound_mail.id")
    status: str = Field(default="pending", index=True)   # pending | sent | failed
    attempts: int = 0
    next_attempt_at: datetime
    last_error: str | None = None
    created_at: datetime
    sent_at: datetime | None = None
