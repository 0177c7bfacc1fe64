"""python -m bot: the rigops command."""

from bot.cli import main

raise SystemExit(main())
