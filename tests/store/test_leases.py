"""Replicas on one state, on every engine: heartbeats, who owns which run, adoption when an owner goes silent,
and a run's end told once. Each decision is one statement the database makes atomic."""

from __future__ import annotations

import time
from pathlib import Path

from bot.store import Store
from bot.store.replicas import Identity, Replicas
from tests.harness import record_run

TIMEOUT = 10.0


def other(state: Store, me: str) -> Replicas:
    """A second rigops on the same state (the Store's database, another replica id)."""
    return Replicas(state._db, me)


def test_a_heartbeat_says_who_is_alive_and_who_leads(state: Store) -> None:
    mine, theirs = state.replicas, other(state, "b-1")
    now = time.time()
    mine.beat(leader=True, following=2, now=now)
    theirs.beat(leader=False, following=0, now=now - 30)  # silent for 30 s
    found = {r.id: (r.leader, r.following, alive) for r, alive in mine.all(timeout=TIMEOUT, now=now)}
    assert found == {mine.me: (True, 2, True), "b-1": (False, 0, False)}
    mine.beat(leader=False, following=1, now=now + 1)
    assert [(r.leader, r.following) for r, _ in mine.all(timeout=TIMEOUT) if r.id == mine.me] == [(False, 1)]
    mine.forget_dead(older_than=20, now=now)
    assert [r.id for r, _ in mine.all(timeout=TIMEOUT, now=now)] == [mine.me]


def test_a_run_is_owned_by_the_rigops_that_started_it_until_that_one_goes_silent(state: Store) -> None:
    mine, theirs = state.replicas, other(state, "b-1")
    now = time.time()
    run = record_run(state, "b200", "app")
    assert state.run(run.id).owner == mine.me  # type: ignore[union-attr]
    mine.beat(leader=False, following=1, now=now)
    theirs.beat(leader=False, following=0, now=now)
    assert not theirs.claim(run.id, timeout=TIMEOUT, now=now)
    assert theirs.orphans(timeout=TIMEOUT, now=now) == []
    assert mine.owned() == {run.id} and theirs.owned() == set()

    later = now + TIMEOUT + 1  # mine stopped beating; theirs goes on
    theirs.beat(leader=False, following=0, now=later)
    assert theirs.orphans(timeout=TIMEOUT, now=later) == [run.id]
    assert theirs.claim(run.id, timeout=TIMEOUT, now=later)
    assert not mine.claim(run.id, timeout=TIMEOUT, now=later)  # the one that comes back finds it taken
    assert state.run(run.id).owner == "b-1"  # type: ignore[union-attr]
    assert theirs.owned() == {run.id} and mine.owned() == set()


def test_one_of_two_claims_of_an_orphan_wins(state: Store) -> None:
    run = record_run(state, "b200", "app")
    state.replicas.leave()  # its rigops stopped cleanly: free at once, no timeout to wait
    a, b = other(state, "a-1"), other(state, "b-1")
    for replica in (a, b):
        replica.beat(leader=False, following=0)
    assert a.orphans(timeout=TIMEOUT) == [run.id] == b.orphans(timeout=TIMEOUT)
    assert [a.claim(run.id, timeout=TIMEOUT), b.claim(run.id, timeout=TIMEOUT)] == [True, False]


def test_a_run_that_ended_is_adopted_until_its_end_was_told(state: Store) -> None:
    mine, theirs = state.replicas, other(state, "b-1")
    run = record_run(state, "b200", "app")
    state.finish_run(run.id, state="failed", exit_status=2)  # then its rigops died before telling it
    later = time.time() + TIMEOUT + 1
    theirs.beat(leader=False, following=0, now=later)
    assert theirs.orphans(timeout=TIMEOUT, now=later) == [run.id]
    mine.reported(run.id)
    assert theirs.orphans(timeout=TIMEOUT, now=later) == []
    mine.set_card(run.id, "1700000000.000100")
    assert state.run(run.id).card_id == "1700000000.000100"  # type: ignore[union-attr]


def test_the_replica_id_is_the_state_dirs_while_one_process_holds_it(tmp_path: Path) -> None:
    first = Identity.of(tmp_path)
    second = Identity.of(tmp_path)  # the state dir is in use: an id of its own
    assert first.id != second.id
    first.close()
    again = Identity.of(tmp_path)  # rigops restarted on the state dir: the same replica, its runs still its own
    assert again.id == first.id
    again.close()
    second.close()


def test_a_press_handed_to_a_runs_owner_goes_with_the_run_when_it_is_adopted(state: Store) -> None:
    mine, theirs = state.replicas, other(state, "b-1")
    run = record_run(state, "b200", "app")
    press = {"kind": "oom_pause", "value": str(run.id), "user": "U0HUMAN", "message": "1.2",
             "place": {"channel": "C0OPS", "thread": "1.1", "private_route": None}}
    theirs.hand_over(mine.me, run.id, press)
    assert theirs.handed_over() == []  # not theirs to act on
    assert mine.handed_over() == [press]
    assert mine.handed_over() == []  # taken once

    theirs.hand_over(mine.me, run.id, press)  # then mine dies before its next beat
    later = time.time() + TIMEOUT + 1
    theirs.beat(leader=False, following=0, now=later)
    assert theirs.claim(run.id, timeout=TIMEOUT, now=later)
    assert theirs.handed_over() == [press]
    theirs.hand_over(mine.me, run.id, press)
    assert mine.handed_over(now=time.time() + 3600) == []  # pressed an hour ago: nobody waits for it any more
