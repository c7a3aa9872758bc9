"""a mail's bytes kept apart from its row: inbound_raw and outbound_body

A stored or queued mail's row is written again by each claim, sent mark and finish, and
SQLite writes an updated row whole: the mail in it (a report is some 40 KB, on overflow
pages) went through the WAL again at every status change. The bytes move to a table of
their own, keyed by the mail's id, written once and deleted with the mail (ON DELETE
CASCADE); the rows keep their small columns. PostgreSQL kept large values out of line
already (TOAST): there the move changes what a statement reads, not what it writes.

The raw column is dropped in place (SQLite's ALTER TABLE DROP COLUMN, 3.35 and later),
not by copying the table: a copy drops the old table, and with foreign keys on that
would delete the bytes just moved (ON DELETE CASCADE).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

_APART = (('inbound_mail', 'inbound_raw'), ('outbound_mail', 'outbound_body'))


def upgrade() -> None:
    for mail, body in _APART:
        op.create_table(
            body,
            sa.Column('mail_id', sa.Integer(), nullable=False),
            sa.Column('raw', sa.LargeBinary(), nullable=False),
            sa.ForeignKeyConstraint(['mail_id'], [f'{mail}.id'], ondelete='CASCADE'),
            sa.PrimaryKeyConstraint('mail_id'))
        op.execute(f'INSERT INTO {body} (mail_id, raw) SELECT id, raw FROM {mail}')
        op.drop_column(mail, 'raw')


def downgrade() -> None:
    for mail, body in _APART:
        op.add_column(mail, sa.Column('raw', sa.LargeBinary(), nullable=True))
        op.execute(f'UPDATE {mail} SET raw = (SELECT raw FROM {body} WHERE mail_id = {mail}.id)')
        op.drop_table(body)
        with op.batch_alter_table(mail, schema=None) as batch_op:
            batch_op.alter_column('raw', existing_type=sa.LargeBinary(), nullable=False)
