"""Games in the database: the queries, and the changes to a game's stored state.

records (a game's and its players' rows, read and changed), states (a game's state,
replayed from its record), turn_in_play (the orders in, GameFacts), lifecycle (made,
joined, started), reporting (what a turn's reports read besides the state), audit (the
audit trail). Every function here works inside the caller's transaction.

The data layer: imports the pure core (kinds, rules, options, deadlines),
the schema (pbem.store.models) and pbem.store.security (new keys); nothing that sends
mail or runs commands.
"""
