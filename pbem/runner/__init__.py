"""One mail from the mailbox to its answer: fetch, claim, triage, reply."""
