"""The mail edges: reading mail (read, text), writing it (compose), IMAP, SMTP out, the
SMTP listener (listener, smtpguard, recipients, arrival_auth, dnsquery, logstorm);
deliverability: DKIM signatures (dkim), bounces (bounces), the receiving
server's Authentication-Results (senderauth), no remote content in HTML (remote_content).

An edge: imports only the standard library, its mail libraries and
pbem.store.faults (crash points); never the game layers (pyproject.toml: the
import contracts).
"""
