"""Reading a player's words into orders (pure; no database, no mail).

parsing (the order language: the commands' table and a mail's lines read into orders),
arguments (an order's arguments: faces, quantities, bids, one word, a turn), guidance
(HELP's lines, the lines that came nearest to an order), reading (orders as people write
them), phrases (the phrases reading matches), typos (the order word a mistyped word may
be), words (the order words of every language).
"""
