"""Front ends: each hands the core what a person said or pressed and shows the core's Messages — ``slack/``
(the only package that imports slack_bolt) and ``console`` (a terminal)."""
