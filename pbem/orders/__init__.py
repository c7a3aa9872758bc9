"""Reading a player's words into orders (pure; no database, no mail)."""
