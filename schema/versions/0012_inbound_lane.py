"""inbound mail's lane: the game it speaks to, known before it is claimed

On PostgreSQL several workers handle mail side by side, one game's mail (a lane) by one
worker at a time, in arrival order (pbem.runner.lanes.claim_lane): the game a stored mail
speaks to (0: none yet), written once before it is claimed; null: not read yet.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lane', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.drop_column('lane')
