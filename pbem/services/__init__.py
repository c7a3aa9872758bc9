"""Services: the work commands and the clock share, below the commands.

- ``post``: every mail the server writes (answers, notices, the referee's
  notices), through the outbox, with the one subject tag ``[bluff <game>]``;
- ``reports``: the turn reports (text, HTML and report.json);
- ``bounces``: a bounce of our mail marks its address, tells the referee, and
  the next report says so; mail from the address clears it;
- ``turns``: the one step that resolves a turn (``settle``: a command's change
  or the deadline; the turn played, its reports queued) and the missed-turn count;
- ``clock``: the deadline work of a tick (outage shift, vacations,
  reminders, grace, due turns);
- ``export``: a game's record as JSON.

Services import the data layer (pbem.games, pbem.store.models), the pure core and
the edges (outbox, render, config); never pbem.commands or anything above.
"""
