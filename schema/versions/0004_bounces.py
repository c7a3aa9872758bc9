"""bounces: the VERP token of each outgoing mail, the bounce state of each address

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('bounce_token', sqlmodel.sql.sqltypes.AutoString(),
                                      nullable=True))
        batch_op.create_index(batch_op.f('ix_outbound_mail_bounce_token'), ['bounce_token'],
                              unique=False)

    op.create_table('bounce_state',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('failing', sa.Boolean(), nullable=False),
    sa.Column('hard_bounces', sa.Integer(), nullable=False),
    sa.Column('soft_bounces', sa.Integer(), nullable=False),
    sa.Column('last_bounce_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_reason', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('seat', sa.Integer(), nullable=True),
    sa.Column('message_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('referee_told_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('report_pending', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('address')
    )


def downgrade() -> None:
    op.drop_table('bounce_state')
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbound_mail_bounce_token'))
        batch_op.drop_column('bounce_token')
