"""indexes for the web pages' game lists

The games index of `pbem web` lists games by status, the running ones by deadline and the
finished ones by their end, a page at a time; with 10,000 games these indexes halve its
time (bench/web_pages.py).

Revision ID: 0006
Revises: 0002
Create Date: 2026-12-01
"""
from alembic import op

revision = '0006'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.create_index('ix_game_status_deadline', ['status', 'deadline'], unique=False)
        batch_op.create_index('ix_game_status_ended_at', ['status', 'ended_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_index('ix_game_status_ended_at')
        batch_op.drop_index('ix_game_status_deadline')
