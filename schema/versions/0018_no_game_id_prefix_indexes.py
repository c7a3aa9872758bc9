"""the game_id indexes that another index of the same table begins with, dropped

move, pendingorder and outbound_mail each had an index on game_id alone, and another
that begins with game_id: the unique (game_id, turn, seat) of a move and of an order,
(game_id, kind) of a mail. Every read by game_id (and a game's delete, checking its
rows' foreign keys) is served by the longer one as well, so the short one was only
written: a leaf of it with each order, each move and each mail queued or deleted, in a
place of its own for each game, so at thousands of games a page of its own written
to the WAL, and again by the checkpoint, with nearly every order.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None

# (table, index): each table's longer index begins with game_id
PREFIXES = (('move', 'ix_move_game_id'), ('pendingorder', 'ix_pendingorder_game_id'),
            ('outbound_mail', 'ix_outbound_mail_game_id'))


def upgrade() -> None:
    for table, index in PREFIXES:
        op.drop_index(index, table_name=table)


def downgrade() -> None:
    for table, index in PREFIXES:
        op.create_index(index, table, ['game_id'], unique=False)
