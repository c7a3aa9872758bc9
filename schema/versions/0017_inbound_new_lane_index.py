"""the new inbound mail indexed by lane and id

A worker claims a game's lane by its new mail, oldest first (pbem.runner.lanes.claim_lane),
and gives stored mail its lane oldest first (give_lanes: the new mail without one). With
the index on status alone each such read went through every new mail: at 50,000 stored
orders (a turn of 10,000 games) a lane's claim cost the server 13.6 ms, once a game. A
partial index on (lane, id) of the new mail reads the lane's few rows (0.05 ms there);
done mail leaves it, so it stays the size of the mail waiting.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

NEW = sa.text("status = 'new'")


def upgrade() -> None:
    op.create_index('ix_inbound_mail_new_lane', 'inbound_mail', ['lane', 'id'], unique=False,
                    postgresql_where=NEW, sqlite_where=NEW)


def downgrade() -> None:
    op.drop_index('ix_inbound_mail_new_lane', table_name='inbound_mail')
