"""Several rigops on one state: who is alive, who follows which run, and what must happen once between them.

Each rigops is a replica with an id. It says it is alive every few seconds (a heartbeat: its row's ``seen_at``);
one whose heartbeat is older than the timeout is taken for dead. A live run is followed by the replica that owns it
(``runs.owner``): the one that started it, or the one that adopted it when its owner died, by one conditional
``UPDATE`` that only one replica can win. A run whose end was not yet told in its thread (``reported = 0``) is
adopted the same way, so the end of a build is told even when its follower died just as it ended.

The id comes from the state dir (the file ``replica``, locked while rigops runs): a rigops restarted on the same
state dir is the same replica and picks its runs up at once; a second rigops on a state dir already in use gets
an id of its own. Times are the replicas' clocks (keep them in sync, as any cluster does: NTP).

A button of a run's OOM guard ([Pause], [Resume now], [Stop & restart]) acts on what only the run's follower
holds (the alert, the compilers it paused): pressed on another replica, it is handed to the owner
(:meth:`Replicas.hand_over`), which takes it on its next beat.

Slack sends a slash command once, to one rigops, and never again: the one that gets it claims it here before it
acknowledges it (:meth:`Replicas.claim_command`) and marks it done once answered; one claimed by a replica that
died in between is taken over by another (:meth:`Replicas.take_command`) and answered there.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.store.engine import Database, Row

ID_FILE = "replica"
RECENT_END = 24 * 3600  # an unreported end older than this is not told any more
HANDOFF_KEPT = 600.0  # seconds a press handed to another replica is still acted on
COMMAND_ANSWERABLE = 1800.0  # a slash command's response_url lasts 30 minutes: an orphan older is not answered
COMMANDS_KEPT = 24 * 3600.0  # the rows of claimed commands are dropped after a day
OUTAGES_KEPT = 30 * 24 * 3600.0  # the state's outages are kept for a month


@dataclass(frozen=True)
class Replica:
    """One rigops as the others see it."""

    id: str
    name: str  # the machine it runs on
    pid: int
    started_at: float
    seen_at: float
    leader: bool  # it posts the scheduled digests
    following: int  # how many runs it follows


def seen(rows: Iterable[Row | Mapping[str, Any]], *, timeout: float,
         now: float | None = None) -> list[tuple[Replica, bool]]:
    """Replicas' rows, each with whether it is alive (heard within ``timeout``): the living first, the leader
    first among them, then the most recently heard."""
    now = now or time.time()
    found = [(Replica(id=r["id"], name=r["name"], pid=int(r["pid"]), started_at=r["started_at"],
                      seen_at=r["seen_at"], leader=bool(r["leader"]), following=int(r["following"])),
              r["seen_at"] >= now - timeout) for r in rows]
    return sorted(found, key=lambda f: (not f[1], not f[0].leader, -f[0].seen_at))


class Identity:
    """This process's replica id, kept in the state dir and locked there while it runs."""

    def __init__(self, replica_id: str, fd: int | None) -> None:
        self.id = replica_id
        self._fd = fd

    @classmethod
    def of(cls, state_dir: Path) -> Identity:
        """The state dir's id when no other process holds it, else an id of this process's own."""
        path = state_dir / ID_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return cls(_new_id(), None)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return cls(_new_id(), None)
        kept = os.read(fd, 200).decode(errors="replace").strip()
        if not kept:
            kept = _new_id()
            os.write(fd, f"{kept}\n".encode())
        return cls(kept, fd)

    def close(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _new_id() -> str:
    return f"{socket.gethostname()}-{secrets.token_hex(4)}"


class Replicas:
    """The replicas' rows and the runs' owners. Raises StateError."""

    def __init__(self, db: Database, me: str) -> None:
        self._db = db
        self.me = me
        self.started_at = time.time()

    def beat(self, *, leader: bool, following: int, now: float | None = None) -> None:
        """Say this replica is alive (and whether it leads, how many runs it follows)."""
        now = now or time.time()
        with self._db.transaction() as db:
            db.execute("INSERT INTO replicas (id, name, pid, started_at, seen_at, leader, following) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
                       "pid = excluded.pid, started_at = excluded.started_at, seen_at = excluded.seen_at, "
                       "leader = excluded.leader, following = excluded.following",
                       (self.me, socket.gethostname(), os.getpid(), self.started_at, now, int(leader), following))

    def leave(self) -> None:
        """This replica stops: its runs are free for the others at once (not after the timeout)."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET owner = NULL WHERE owner = ?", (self.me,))
            db.execute("DELETE FROM replicas WHERE id = ?", (self.me,))

    def all(self, *, timeout: float, now: float | None = None) -> list[tuple[Replica, bool]]:
        """Every replica that has not left, with whether it is alive; the living first."""
        return seen(self._db.query("SELECT * FROM replicas"), timeout=timeout, now=now)

    def forget_dead(self, *, older_than: float, now: float | None = None) -> None:
        """Drop the rows of replicas silent for longer than ``older_than`` seconds (after a kill -9)."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM replicas WHERE seen_at < ? AND id <> ?", ((now or time.time()) - older_than,
                                                                              self.me))

    def claim(self, run_id: int, *, timeout: float, now: float | None = None) -> bool:
        """Own a run: when nobody does, this replica already does, or its owner is dead. True when it is ours (and
        so are the presses handed to its owner before)."""
        alive = (now or time.time()) - timeout
        with self._db.transaction() as db:
            cur = db.execute("UPDATE runs SET owner = ? WHERE id = ? AND (owner IS NULL OR owner = ? OR owner NOT IN "
                             "(SELECT id FROM replicas WHERE seen_at >= ?))", (self.me, run_id, self.me, alive))
            if cur.rowcount != 1:
                return False
            db.execute("UPDATE handoffs SET replica = ? WHERE run_id = ?", (self.me, run_id))
            return True

    def hand_over(self, owner: str, run_id: int, press: dict[str, Any]) -> None:
        """A press about a run another replica follows: that one acts on it (its next beat picks it up)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO handoffs (replica, run_id, press, at) VALUES (?, ?, ?, ?)",
                       (owner, run_id, json.dumps(press), time.time()))

    def handed_over(self, *, now: float | None = None) -> list[dict[str, Any]]:
        """Take the presses handed to this replica, oldest first (one older than HANDOFF_KEPT is dropped: whoever
        pressed has long seen nothing happen)."""
        now = now or time.time()
        with self._db.transaction() as db:
            rows = db.execute("DELETE FROM handoffs WHERE replica = ? RETURNING id, press, at", (self.me,)).fetchall()
        return [json.loads(press) for _, press, at in sorted(rows) if at >= now - HANDOFF_KEPT]

    def orphans(self, *, timeout: float, now: float | None = None) -> list[int]:
        """The runs nobody alive follows: live, or ended without their end told; oldest first."""
        now = now or time.time()
        rows = self._db.query(
            "SELECT id FROM runs WHERE (state IN ('starting', 'running') OR (reported = 0 AND ended_at > ?)) "
            "AND (owner IS NULL OR (owner <> ? AND owner NOT IN (SELECT id FROM replicas WHERE seen_at >= ?))) "
            "ORDER BY id", (now - RECENT_END, self.me, now - timeout))
        return [int(r["id"]) for r in rows]

    def taken(self, run_ids: Iterable[int]) -> set[int]:
        """Which of ``run_ids`` this replica no longer owns (another adopted them while it was cut off)."""
        ids = list(run_ids)
        if not ids:
            return set()
        rows = self._db.query(f"SELECT id FROM runs WHERE id IN ({', '.join('?' * len(ids))}) "
                              "AND (owner IS NULL OR owner <> ?)", (*ids, self.me))
        return {int(r["id"]) for r in rows}

    def owned(self) -> set[int]:
        """The runs this replica owns that are live or not yet reported."""
        rows = self._db.query("SELECT id FROM runs WHERE owner = ? AND (state IN ('starting', 'running') "
                              "OR reported = 0)", (self.me,))
        return {int(r["id"]) for r in rows}

    # -- outages --------------------------------------------------------------------------------------
    def record_outage(self, began_at: float, lasted: float, problem: str) -> None:
        """This replica could not use the state from ``began_at`` for ``lasted`` seconds (written once it can)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO outages (replica, began_at, lasted, problem) VALUES (?, ?, ?, ?)",
                       (self.me, began_at, lasted, problem[:500]))
            db.execute("DELETE FROM outages WHERE began_at < ?", (time.time() - OUTAGES_KEPT,))

    # -- slash commands ---------------------------------------------------------------------------------
    def claim_command(self, key: str, command: Mapping[str, Any], *, now: float | None = None) -> bool:
        """Claim a slash command before acknowledging it; False when it was claimed already (the same command
        delivered again)."""
        now = now or time.time()
        with self._db.transaction() as db:
            cur = db.execute("INSERT INTO commands (key, replica, command, claimed_at) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (key) DO NOTHING", (key, self.me, json.dumps(command), now))
            db.execute("DELETE FROM commands WHERE claimed_at < ?", (now - COMMANDS_KEPT,))
            return cur.rowcount == 1

    def command_done(self, key: str) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE commands SET done_at = ? WHERE key = ?", (time.time(), key))

    def orphan_commands(self, *, timeout: float, now: float | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The commands claimed by a rigops that stopped answering before it answered them, still young enough
        to answer (Slack's response_url lasts 30 minutes), oldest first."""
        now = now or time.time()
        rows = self._db.query(
            "SELECT key, command FROM commands WHERE done_at IS NULL AND claimed_at >= ? AND replica <> ? AND "
            "replica NOT IN (SELECT id FROM replicas WHERE seen_at >= ?) ORDER BY claimed_at",
            (now - COMMAND_ANSWERABLE, self.me, now - timeout))
        return [(str(r["key"]), json.loads(r["command"])) for r in rows]

    def take_command(self, key: str, *, timeout: float, now: float | None = None) -> str | None:
        """Take a command over from the dead rigops that claimed it; its id, or None when another took it."""
        alive = (now or time.time()) - timeout
        with self._db.transaction() as db:
            rows = db.execute("SELECT replica FROM commands WHERE key = ? AND done_at IS NULL", (key,)).fetchall()
            if not rows:
                return None
            cur = db.execute("UPDATE commands SET replica = ? WHERE key = ? AND replica = ? AND done_at IS NULL AND "
                             "replica NOT IN (SELECT id FROM replicas WHERE seen_at >= ?)",
                             (self.me, key, rows[0][0], alive))
            return str(rows[0][0]) if cur.rowcount == 1 else None

    def set_card(self, run_id: int, card_id: str) -> None:
        """Where a run's status card is, for whoever follows it next."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET card_ts = ? WHERE id = ?", (card_id, run_id))

    def reported(self, run_id: int) -> None:
        """A run's end was told in its thread."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET reported = 1 WHERE id = ?", (run_id,))
