"""private press: table talk to one seat

SAY TO <seat> in a game with PRESS private: the seat the message was said to (null: the
whole table).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('talk_message', schema=None) as batch_op:
        batch_op.add_column(sa.Column('to_seat', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('talk_message', schema=None) as batch_op:
        batch_op.drop_column('to_seat')
