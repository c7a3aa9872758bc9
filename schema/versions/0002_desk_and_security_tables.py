"""desk and security tables

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('absence',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('starts', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('ends', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('absence', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_absence_email'), ['email'], unique=False)

    op.create_table('sender_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sender_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sender_event_address'), ['address'], unique=False)
        batch_op.create_index(batch_op.f('ix_sender_event_kind'), ['kind'], unique=False)

    op.create_table('server_state',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('audit_entry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('detail', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_entry_game_id'), ['game_id'], unique=False)

    op.create_table('signup',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('code_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('confirmed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('signup', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_signup_game_id'), ['game_id'], unique=False)

    op.create_table('talk_message',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('turn', sa.Integer(), nullable=False),
    sa.Column('seat', sa.Integer(), nullable=True),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('text', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('talk_message', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_talk_message_game_id'), ['game_id'], unique=False)

    op.create_table('watcher',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('game_id', 'email')
    )
    with op.batch_alter_table('watcher', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_watcher_game_id'), ['game_id'], unique=False)

    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('options_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default='{}'))
        batch_op.add_column(sa.Column('turn_started_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('paused_left_seconds', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('reminded_turn', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('grace_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))

    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('claimed_by', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('claimed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))

    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('claimed_by', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('claimed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))

    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.add_column(sa.Column('key_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('active', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('default_order', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('missed_turns', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('absent_days_used', sa.Float(), nullable=False, server_default='0'))



def downgrade() -> None:
    with op.batch_alter_table('player', schema=None) as batch_op:
        batch_op.drop_column('absent_days_used')
        batch_op.drop_column('missed_turns')
        batch_op.drop_column('default_order')
        batch_op.drop_column('active')
        batch_op.drop_column('key_hash')

    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_column('claimed_at')
        batch_op.drop_column('claimed_by')

    with op.batch_alter_table('inbound_mail', schema=None) as batch_op:
        batch_op.drop_column('claimed_at')
        batch_op.drop_column('claimed_by')

    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_column('grace_until')
        batch_op.drop_column('reminded_turn')
        batch_op.drop_column('paused_left_seconds')
        batch_op.drop_column('turn_started_at')
        batch_op.drop_column('options_json')

    with op.batch_alter_table('watcher', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_watcher_game_id'))

    op.drop_table('watcher')
    with op.batch_alter_table('talk_message', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_talk_message_game_id'))

    op.drop_table('talk_message')
    with op.batch_alter_table('signup', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_signup_game_id'))

    op.drop_table('signup')
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_entry_game_id'))

    op.drop_table('audit_entry')
    op.drop_table('server_state')
    with op.batch_alter_table('sender_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sender_event_kind'))
        batch_op.drop_index(batch_op.f('ix_sender_event_address'))

    op.drop_table('sender_event')
    with op.batch_alter_table('absence', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_absence_email'))

    op.drop_table('absence')
