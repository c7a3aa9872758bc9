"""a player's own time zone and language

TIMEZONE Europe/Prague: the IANA name each player reads deadlines in (null: UTC alone).
LANGUAGE de: the language of the player's mail (null: the game's).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.add_column(sa.Column('timezone', sa.String(), nullable=True))
        batch_op.add_column(sa.Column('language', sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.drop_column('language')
        batch_op.drop_column('timezone')
