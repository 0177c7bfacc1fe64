"""python -m bot: the rigops command."""

from bot.app.cli import main

raise SystemExit(main())
