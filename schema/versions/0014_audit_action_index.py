"""an index on the audit entries' action

`pbem status`, each /healthz and each /metrics scrape count the games that failed (the
audit entries of that action); without an index that read every entry of every game's
history, a cost that grew with the history (bench/status_figures.py).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.create_index('ix_audit_entry_action', ['action'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_entry_action')
