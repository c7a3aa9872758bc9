"""A game played by robots over the real mail path, for `pbem demo`."""
