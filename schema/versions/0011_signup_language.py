"""sign-up language: the language a JOIN was written in

A JOIN written with German or Czech order words (ANMELDEN, PŘIHLÁSIT) is answered in
that language, and the player it makes on CONFIRM reads that language (Player.language).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('signup', schema=None) as batch_op:
        batch_op.add_column(sa.Column('language', sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('signup', schema=None) as batch_op:
        batch_op.drop_column('language')
