"""Every mail command, in one table (pbem.commands.registry), Mailman style.

Each command is one declaration: its name, usage, summary (the help text),
argument parser, who may use it (a known player, the referee, anyone) and
its phase (pbem.orders.commands.Command), and, for what the referee runs, its action
(``MailCommand``: ``run(ctx, order) -> str``). The registry lists them all;
its tables drive parsing, dispatch, permission and HELP for player orders,
player desk commands and referee commands alike. A refusal is
pbem.text.errors.Refusal. The modules:

- ``context``: what an action sees (CommandContext), MailCommand, Turnkey;
- ``registry``: the declarations, the tables, HELP, and ``run`` (permission + dispatch);
- ``moves``: a player's move order and STATUS;
- ``signup``, ``table_talk``, ``player_desk``: JOIN ... WATCH; SAY; ABSENT, DEFAULT,
  LANGUAGE, TIMEZONE, HISTORY, ORDERS, RECORD;
- ``referee_cmds``, ``schedule``, ``seats``, ``rollback``: the referee's commands.

Commands import the services (pbem.services), the data layer, the pure core
and the edges; never the runner (pbem.runner.referee, pbem.runner.inbox) or the shell.
"""
