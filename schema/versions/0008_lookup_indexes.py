"""indexes for two looks that took the wrong one

An index on the outbox's game and kind.
START drops the welcomes of its game that have not left yet: a look by game and kind.
With only single-column indexes SQLite took the one on status, and every mail not sent
yet (thousands, when a referee's mail starts many games in one tick) was read for each
START: a tick of 1,000 new games took 27 times one of 100. A game's mails of one kind are
a handful (bench/scale.py).

An index on a sender's events by address, kind and time: counting an address's failed
keys or answers of the day took the index on kind, that is every event of that kind.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.create_index('ix_outbound_mail_game_kind', ['game_id', 'kind'], unique=False)
    with op.batch_alter_table('sender_event', schema=None) as batch_op:
        batch_op.create_index('ix_sender_event_address_kind_at', ['address', 'kind', 'at'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('sender_event', schema=None) as batch_op:
        batch_op.drop_index('ix_sender_event_address_kind_at')
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_index('ix_outbound_mail_game_kind')
