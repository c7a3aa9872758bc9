"""Reading a player's words into orders (pure; no database, no mail).

commands (the order language: what a command is, its table, what reading yields),
parsing (a mail's lines read into orders by those commands),
arguments (an order's arguments: faces, quantities, bids, one word, a turn), guidance
(HELP's lines, the lines that came nearest to an order), reading (orders as people write
them), phrases (the phrases reading matches), typos (the order word a mistyped word may
be), words (the order words of every language).
"""
