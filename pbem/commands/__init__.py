"""Every mail command, in one table (pbem.commands.registry), Mailman style.

Each command (pbem.orders.Command) has its name, usage, summary, argument
parser, action and who may use it (a known player, the referee, anyone):
the table drives parsing, dispatch, permission and HELP for player orders,
player desk commands and referee commands alike. The modules:

- ``context``: what an action sees (CommandContext), Refusal, Turnkey;
- ``registry``: the table, HELP, and ``run`` (permission + dispatch);
- ``moves``: a player's move order and STATUS;
- ``signup``, ``player_desk``: JOIN ... WATCH; SAY, ABSENT, DEFAULT, HISTORY, ORDERS;
- ``referee_cmds``, ``schedule``, ``seats``, ``rollback``: the referee's commands.

Commands import the services (pbem.services), the data layer, the pure core
and the edges; never the runner (pbem.referee, pbem.inbox) or the shell.
"""
