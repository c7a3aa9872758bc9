"""inbound mail's pruned_at: when [retention] cut its text to the header

A handled mail's text is kept while its game is on and [retention] inbound_days after it
ended (pbem.runner.retention); then it is cut to its header and the row stays, marked here.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pruned_at', sqlmodel.sql.sqltypes.UTCDateTime(),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.drop_column('pruned_at')
