"""The database and what guards it: sessions, claims, faults, back-off."""
