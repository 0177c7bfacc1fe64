"""Memory: what a host or a build's memory limit holds, and what rigops does about it.

``meminfo`` reads ``free -h``'s numbers; ``frame`` the memory a build lives in and the room left there;
``fit`` the one formula for how many compile jobs fit; ``advisor`` the -j before a build, from its past runs;
``watch`` the OOM watch during one (kills, pressure episodes); ``policy`` the decisions: alert, pause, restart,
which compilers, what -j, when to resume, and where the digest calls memory low or tight; ``chart`` a build's
memory record and its chart. All pure: the core carries the decisions out (``bot/core/guard.py``) and ``bot/text/``
words them.
"""
