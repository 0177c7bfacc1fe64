"""Language: how chat and commands are read into a Plan — the intents (rules, word tables, numbers, tolerance
of typos), the command table, the plan's types, and how a schedule's "when" is written."""
