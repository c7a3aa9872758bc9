"""an index on the players' addresses

Every mail from a person asks whether its address plays anywhere (pbem.store.security
known_address, pbem.games running_games_of): without an index that reads the whole
player table, five rows a game, for each mail of a turn.

Revision ID: 0007
Revises: 0003
Create Date: 2026-12-01
"""
from alembic import op

revision = '0007'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_player_email'), ['email'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_player_email'))
