"""the outbox's status index also orders by sent_at

The send budget counts the mail sent since a minute or a day ago on each drain; with an
index on status alone that read every mail ever sent (bench/outbox_budget.py: 83 ms at
200,000 sent mails, growing with the history). An index on (status, sent_at) reads the
range; it replaces the one on status, whose looks it serves by its first column, so a
mail written or marked sent maintains no more index than before.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_index('ix_outbound_mail_status')
        batch_op.create_index('ix_outbound_mail_status_sent_at', ['status', 'sent_at'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_index('ix_outbound_mail_status_sent_at')
        batch_op.create_index('ix_outbound_mail_status', ['status'], unique=False)
