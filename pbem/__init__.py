"""pbem: a play-by-email referee for the dice game Bluff.

Layers, top to bottom (imports only point down; docs/architecture.md): the shell
(cli, demo, server), the runner (referee, sender_check, inbox), commands/,
services/, the data layer (games), the pure core (kinds/, options,
deadlines, orders, rules/) and the edges (outbox, security, db, render,
config, mail/, faults, paths, models).
"""

__version__ = "0.1.0"
