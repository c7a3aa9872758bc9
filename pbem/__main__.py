"""`python3 -m pbem ...`: the pbem command without a script on PATH (no venv activated)."""

from pbem.cli import main

raise SystemExit(main())
