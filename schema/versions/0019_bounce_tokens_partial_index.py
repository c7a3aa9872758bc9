"""the bounce tokens' index holds the tokens alone

A mail queued without VERP ([smtp] verp off, the default) draws no bounce token now, and
an index of the column holds an entry for every row, a null one too: an entry written
with every mail queued, never read (a bounce's VERP token is looked up by its value).
The index is made again with "WHERE bounce_token IS NOT NULL": a look-up by a token is
served by it as before (a token = value is never null), and a mail without one writes
no entry.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""
import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

INDEX = 'ix_outbound_mail_bounce_token'
TOKENS_ONLY = sa.text('bounce_token IS NOT NULL')


def upgrade() -> None:
    op.drop_index(INDEX, table_name='outbound_mail')
    op.create_index(INDEX, 'outbound_mail', ['bounce_token'], unique=False,
                    sqlite_where=TOKENS_ONLY, postgresql_where=TOKENS_ONLY)


def downgrade() -> None:
    op.drop_index(INDEX, table_name='outbound_mail')
    op.create_index(INDEX, 'outbound_mail', ['bounce_token'], unique=False)
