"""Where a room lives and how its changes reach the followers: in this process, or through Redis.

MemoryBroker keeps rooms in this process (and in SQLite, so that a restart keeps them); RedisBroker
keeps them in Redis (a hash per room, a sorted set of open rooms) and fans out through Redis pub/sub,
so that followers on any worker process see the presenter's changes. Both deliver to the sockets of
this process the same way: each socket has a queue of ready-made JSON texts, filled in order.

Messages (JSON objects, one per WebSocket text frame):
  {"state": {...}, "seq": n}        the presenter's new view (seq grows by one per change)
  {"followers": n}                  the number of followers, when it changes (at most 5 times a second)
  {"presenters": n}                 the number of presenter sockets that drive the room (the teacher's page,
                                    once it has said {"driving": true}: the room shows its view), when it
                                    changes: 0 means the room shows the last view a presenter sent
  {"quiz": {...} | null}            a quiz was asked, revealed (then it holds "answer" and "counts") or ended
  {"votes": {"id", "answered"}}     how many have answered a quiz (presenter sockets only; the counts
                                    themselves wait for the reveal, so that they steer nobody)
  {"voted": {...}} / {"error": {...}}   the answer to this socket's own vote
  {"closed": "why"}                 the room is closed; the socket closes with code 4404
  {"missing": "why"}                a socket's only message when its room is not there (closed, expired, never
                                    opened, or lost with a Redis that restarted empty); closed with code 4404.
                                    A page that was in the room waits for its presenter to open it again.
  {"lost": "why"}                   the room store (Redis) can't be reached: the socket closes with code 1013
                                    and the page connects again (the first message then brings the room whole)

A follower's hello also holds its seat: {"seat": "<token>"}, issued by the server and signed (a
client cannot make one up); the page keeps it and offers it again when it reconnects (the socket's
subprotocol "seat.<token>"), so it keeps its seat and its one vote. A vote counts once per seat; one
address seats at most limits.seats_per_address() voters of a room (app.classroom.quiz), and holds at
most limits.followers_per_address() follower sockets. A follower's hello during a question holds its
own vote, if it has one ({"yours": {"quiz", "choice"}}); a presenter's holds the lesson being played
({"deck": {...}}, presenters only: the teacher's windows step through it together).

Rooms expire ROOM_TTL_SECONDS after they were opened or last driven (by `clock`): in memory and in
storage at once, their followers told {"closed": ...}.

Redis has a deadline: each command REDIS_TIMEOUT_SECONDS (one retry), each broker call REDIS_DEADLINE_SECONDS
in all; past it, or while Redis is down, a call raises StoreDown (the routes answer 503 naming Redis). Every
second each process asks Redis who it is (its run_id): a Redis that stopped answering, or that restarted
(its pub/sub messages in between are lost), makes every socket of this process hear {"lost": ...} and
connect again. The counts a room shows (followers, presenters, followers per address) are this process's
sockets, written whole into Redis (never added to), so that they come out right again after an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import hmac
import json
import logging
import os
import time
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio

from app.classroom import auth, limits
from app.classroom.store import Store

log = logging.getLogger(__name__)
FOLLOWERS_EVERY = 0.2  # seconds between two {"followers": n} messages of one room
SWEEP_EVERY = 60.0  # seconds between two looks for expired rooms
clock = time.time  # the rooms' clock (tests set their own)
REDIS_TIMEOUT_SECONDS = 1.0  # one Redis command (connecting, or waiting for its answer)
REDIS_DEADLINE_SECONDS = 3.0  # one broker call, however many commands and retries it makes
WATCH_EVERY = 1.0  # seconds between two looks at Redis's run_id (a restart, or a Redis that stopped answering)
LOST = "the classroom server lost its room store, reconnecting"


class StoreDown(Exception):
    """The room store (Redis) can't be reached, or did not answer in time; the message says why."""


def room_ttl() -> float:
    """Seconds a room lives after it was opened or last driven: $ATTENTION_ROOM_TTL, else ROOM_TTL_SECONDS."""
    raw = os.environ.get("ATTENTION_ROOM_TTL", "")
    return float(raw) if raw.isdigit() and int(raw) > 0 else float(limits.ROOM_TTL_SECONDS)


def _seat_key() -> bytes:
    return hashlib.sha256(b"attention3d seat\0" + auth.teacher_token().encode()).digest()


def seat_token(code: str, seat: str) -> str:
    """The signed form of a seat of room `code`, as its follower receives it."""
    mac = hmac.new(_seat_key(), f"{code}\0{seat}".encode(), hashlib.sha256).hexdigest()[:32]
    return f"{seat}.{mac}"


def seat_of(code: str, token: object) -> str | None:
    """The seat a token stands for, if this server issued it for room `code`."""
    if not isinstance(token, str) or len(token) > 100 or "." not in token:
        return None
    seat = token.split(".", 1)[0]
    return seat if hmac.compare_digest(seat_token(code, seat), token) else None


def new_seat() -> str:
    return uuid.uuid4().hex


@dataclass(eq=False)
class Subscriber:
    """One WebSocket of this process: what it is owed, in order."""

    presenter: bool
    address: str = ""  # the client's address ("" when unknown)
    id: str = field(default_factory=new_seat)  # its seat (one the page kept, or a new one)
    queue: asyncio.Queue[str] = field(default_factory=lambda: asyncio.Queue(limits.FOLLOWER_QUEUE))
    overflow: bool = False
    driving: bool = False  # a presenter whose page has said the room shows its view ({"driving": true})

    def put(self, text: str) -> None:
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            self.overflow = True  # its sender closes it; the page reconnects and catches up

    def seat_for_vote(self, code: str, seat: object = None) -> str:
        """The seat a vote of this socket counts for: its own, or an earlier seat of its page (`seat`, a token
        this server issued for room `code`: a page whose socket joined before it had a seat to offer)."""
        return seat_of(code, seat) or self.id


def state_message(state: str | None, seq: int) -> str:
    return '{"state":' + (state or "null") + ',"seq":' + str(seq) + "}"


# why a room closed: its words (English, for logs and old pages) and its kind, which a page says in its own language
CLOSED_WHY = {"expired": "this room expired", "closed": "the presenter closed this room"}


def closed_message(kind: str) -> str:
    return json.dumps({"closed": CLOSED_WHY[kind], "why": kind})


LOST_MESSAGE = json.dumps({"lost": LOST})


class Broker(ABC):
    """Rooms, their current state, their quiz, and the fan-out to this process's sockets."""

    def __init__(self) -> None:
        self.local: dict[str, set[Subscriber]] = {}
        self._count_flush: dict[str, asyncio.Task[None]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # what each broker keeps

    @abstractmethod
    async def create_room(self, code: str, key_digest: str) -> bool:
        """False when the code is taken; raises RoomLimit when MAX_ROOMS are open."""

    @abstractmethod
    async def room_key(self, code: str) -> str | None:
        """The room's presenter-key digest, or None when there is no such room (or it expired)."""

    async def reopen(self, code: str, key_digest: str) -> bool | None:
        """Open room `code` again for the presenter key of `key_digest` (its page, after the room was lost
        with a Redis that restarted empty): True when opened now, False when it is open with this key
        already, None when it is open with another key. RoomLimit when MAX_ROOMS are open."""
        if await self.create_room(code, key_digest):
            return True
        found = await self.room_key(code)
        return False if found is not None and hmac.compare_digest(found, key_digest) else None

    @abstractmethod
    async def close_room(self, code: str) -> None: ...

    @abstractmethod
    async def state(self, code: str) -> tuple[str | None, int]:
        """(state JSON text or None, seq)."""

    @abstractmethod
    async def set_state(self, code: str, state: str) -> int:
        """Keep the new state and publish it to every follower; its seq."""

    @abstractmethod
    async def followers(self, code: str) -> int:
        """Follower sockets of the room, in every process."""

    @abstractmethod
    async def presenters(self, code: str) -> int:
        """Presenter sockets of the room that drive it (the teacher's page, the room in step with it), in
        every process: 0 while no teacher's page is connected, or the one that came back has not yet made
        the room show its view (after a restart), so that no follower says "live" meanwhile."""

    @abstractmethod
    async def from_address(self, code: str, address: str) -> int:
        """Follower sockets of the room from one client address, in every process."""

    async def _counted(self, code: str) -> None:  # noqa: B027 (a broker that counts self.local itself needs none)
        """This process's sockets of room `code` changed (self.local): keep the room's counts in step."""

    def ready(self) -> bool:
        """Whether the room store can be used now (a socket that joins gets every message after its hello)."""
        return True

    @abstractmethod
    async def quiz(self, code: str) -> dict[str, Any] | None: ...

    @abstractmethod
    async def set_quiz(self, code: str, quiz: dict[str, Any] | None) -> None:
        """Keep the room's quiz (or none); its votes start from nothing when its id changes."""

    @abstractmethod
    async def add_vote(self, code: str, quiz_id: str, voters: Iterable[str], choice: int, seconds: float = 0.0) -> bool:
        """Count one vote (its choice, and the seconds it took) unless one of `voters` (its seat, its
        address) already voted in this quiz; the first voter is the one the vote is kept under."""

    @abstractmethod
    async def votes(self, code: str, quiz_id: str) -> list[tuple[int, float]]:
        """Each vote's (choice, seconds after the question was asked)."""

    @abstractmethod
    async def vote_of(self, code: str, quiz_id: str, seat: str) -> int | None:
        """The choice of this seat's vote in this quiz, or None."""

    @abstractmethod
    async def take_seat(self, code: str, address: str, seat: str, most: int) -> bool:
        """Seat a voter from this address (once per seat): False when the address has `most` seats already."""

    @abstractmethod
    async def deck(self, code: str) -> dict[str, Any] | None:
        """The lesson the teacher's windows are playing ({lesson, title, index, count}), or None."""

    @abstractmethod
    async def set_deck(self, code: str, deck: dict[str, Any] | None) -> None:
        """Keep the lesson being played (presenters only hear it: publish it yourself)."""

    @abstractmethod
    async def run(self, code: str) -> str:
        """The id of the room's current class (a new one after a reset): its class reports are kept under it."""

    @abstractmethod
    async def new_run(self, code: str) -> None:
        """A new class in the same room (Reset the room)."""

    @abstractmethod
    async def publish(self, code: str, text: str, presenters_only: bool = False) -> None: ...

    @abstractmethod
    async def log_quiz(self, code: str, entry: dict[str, Any] | None) -> None:
        """Add one finished question to the room's quiz summary (None: forget the summary)."""

    @abstractmethod
    async def quiz_log(self, code: str) -> list[dict[str, Any]]:
        """The room's finished questions, oldest first."""

    async def close(self) -> None:
        for task in self._count_flush.values():
            task.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()

    async def sweep(self) -> None:
        """Tell this process's sockets of rooms that have expired (or gone) that they are closed."""
        for code in list(self.local):
            if await self.room_key(code) is None:
                self.deliver(code, closed_message("expired"))

    def _keep_sweeping(self) -> None:
        """Sweep every half TTL (at most every SWEEP_EVERY seconds) from now on."""
        if self._sweeper is None:

            async def sweep_forever() -> None:
                while True:
                    await asyncio.sleep(min(SWEEP_EVERY, room_ttl() / 2))
                    try:
                        await self.sweep()
                    except StoreDown as e:  # Redis is away: the next sweep looks again
                        log.warning("classroom: no sweep of expired rooms now: %s", e)
                    except Exception:  # a store error must not end the sweeping
                        log.exception("classroom: sweeping expired rooms failed")

            self._sweeper = asyncio.get_running_loop().create_task(sweep_forever())

    # the sockets of this process

    def deliver(self, code: str, text: str, presenters_only: bool = False) -> None:
        for sub in self.local.get(code, ()):
            if sub.presenter or not presenters_only:
                sub.put(text)

    async def join(self, code: str, sub: Subscriber) -> dict[str, Any] | None:
        """Add a socket to the room; the error ({"type", "msg"}) when it may not join: the room has
        MAX_FOLLOWERS followers already, or its address has followers_per_address()."""
        self._keep_sweeping()
        if not sub.presenter and await self.followers(code) >= limits.MAX_FOLLOWERS:
            most = limits.MAX_FOLLOWERS
            return {"type": "room_full", "msg": f"this room is full ({most} followers)", "most": most}
        self.local.setdefault(code, set()).add(sub)
        try:
            await self._counted(code)
            most = limits.followers_per_address()
            if not sub.presenter and await self.from_address(code, sub.address) > most:
                await self._drop(code, sub)
                msg = f"this device already follows this room {most} times: close a tab first"
                return {"type": "address_full", "msg": msg, "most": most}
        except BaseException:
            self._forget(code, sub)
            raise
        await self._changed(code, sub)
        return None

    async def leave(self, code: str, sub: Subscriber) -> None:
        if self._forget(code, sub):
            await self._counted(code)
            await self._changed(code, sub)

    def _forget(self, code: str, sub: Subscriber) -> bool:
        """Take a socket out of this process's sockets of the room; whether it was there."""
        subs = self.local.get(code)
        if subs is None or sub not in subs:
            return False
        subs.discard(sub)
        if not subs:
            del self.local[code]
        return True

    async def _drop(self, code: str, sub: Subscriber) -> None:
        if self._forget(code, sub):
            await self._counted(code)

    async def drive(self, code: str, sub: Subscriber) -> None:
        """A presenter's page says the room shows its view now: it counts among the room's presenters."""
        if sub.presenter and not sub.driving:
            sub.driving = True
            await self._counted(code)
            await self._changed(code, sub)

    async def _changed(self, code: str, sub: Subscriber) -> None:
        """Tell the room a socket came or went: a driving presenter at once, followers in bursts."""
        if sub.presenter:
            if sub.driving:
                await self.publish(code, json.dumps({"presenters": await self.presenters(code)}))
        else:
            self._followers_changed(code)

    def _followers_changed(self, code: str) -> None:
        """Publish the new count soon: one message for a burst of joins (a class arriving at once)."""
        if code in self._count_flush:
            return

        async def flush() -> None:
            await asyncio.sleep(FOLLOWERS_EVERY)
            self._count_flush.pop(code, None)
            with contextlib.suppress(StoreDown):  # the sockets hear {"lost"} and come back: their hellos count
                await self.publish(code, json.dumps({"followers": await self.followers(code)}))

        self._count_flush[code] = asyncio.get_running_loop().create_task(flush())

    async def hello(self, code: str, presenter: bool, seat: str | None = None) -> str:
        """The first message of a socket: the state, the followers, the quiz (and its votes for presenters,
        the lesson being played), a follower's seat (its signed token) and its own vote in the quiz. The
        presenters are counted before the state is read: a presenter drives only once the room shows its
        view, so a hello that counts it also holds that view (the other way round, a view changed in
        between could come with a count that says "in step")."""
        presenters = await self.presenters(code)
        state, seq = await self.state(code)
        quiz = await self.quiz(code)
        text = state_message(state, seq)[:-1] + f',"followers":{await self.followers(code)}'
        text += f',"presenters":{presenters}'
        if seat is not None and not presenter:
            text += ',"seat":' + json.dumps(seat_token(code, seat))
        if quiz is not None:
            text += ',"quiz":' + json.dumps(public_quiz(quiz))
            if presenter and "answer" not in quiz:
                answered = len(await self.votes(code, quiz["id"]))
                text += ',"votes":' + json.dumps({"id": quiz["id"], "answered": answered})
            if seat is not None and not presenter:
                mine = await self.vote_of(code, quiz["id"], seat)
                if mine is not None:
                    text += ',"yours":' + json.dumps({"quiz": quiz["id"], "choice": mine})
        if presenter:
            deck = await self.deck(code)
            if deck is not None:
                text += ',"deck":' + json.dumps(deck)
        return text + "}"


def public_quiz(quiz: dict[str, Any]) -> dict[str, Any]:
    """What every page sees of a quiz: never its answer before the reveal (the server's "secret"),
    and the counts only once it is revealed."""
    return {k: v for k, v in quiz.items() if k != "secret" and (k != "counts" or "answer" in quiz)}


class RoomLimit(Exception):
    pass


@dataclass
class _Room:
    key_digest: str
    touched: float = field(default_factory=lambda: clock())  # opened or last driven
    state: str | None = None
    seq: int = 0
    quiz: dict[str, Any] | None = None
    votes: dict[str, tuple[int, float]] = field(default_factory=dict)  # voter id → (choice, seconds)
    voters: set[str] = field(default_factory=set)
    quiz_log: list[dict[str, Any]] = field(default_factory=list)  # the finished questions
    seats: dict[str, set[str]] = field(default_factory=dict)  # address → the seats that voted from it
    deck: dict[str, Any] | None = None
    run: str = ""  # the class's id, "" until first asked (then made from the room's code and key: a restart keeps it)


class MemoryBroker(Broker):
    """One process: rooms in a dict, kept in SQLite so that a restarted server still knows them."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.rooms: dict[str, _Room] = {}

    def _live(self, code: str) -> _Room | None:
        """The room in memory, unless it has expired."""
        room = self.rooms.get(code)
        if room is not None and clock() - room.touched >= room_ttl():
            return None
        return room

    async def sweep(self) -> None:
        """Close every expired room: out of memory and storage, its followers told."""
        now, ttl = clock(), room_ttl()
        for code in [c for c, r in self.rooms.items() if now - r.touched >= ttl]:
            self.rooms.pop(code, None)
            await anyio.to_thread.run_sync(self.store.delete_room, code)
            self.deliver(code, closed_message("expired"))

    async def _room(self, code: str) -> _Room | None:
        self._keep_sweeping()
        if code in self.rooms and self._live(code) is None:
            await self.sweep()
        room = self.rooms.get(code)
        if room is None:
            saved = await anyio.to_thread.run_sync(self.store.load_room, code)
            if saved is None:
                return None
            room = self.rooms.setdefault(code, _Room(key_digest=saved[0], state=saved[1], seq=saved[2]))
        return room

    async def create_room(self, code: str, key_digest: str) -> bool:
        await self.sweep()
        if await anyio.to_thread.run_sync(self.store.count_rooms) >= limits.MAX_ROOMS:
            raise RoomLimit
        if await self._room(code) is not None:
            return False
        await anyio.to_thread.run_sync(self.store.save_room, code, key_digest)
        self.rooms[code] = _Room(key_digest=key_digest)
        return True

    async def room_key(self, code: str) -> str | None:
        room = await self._room(code)
        return None if room is None else room.key_digest

    async def close_room(self, code: str) -> None:
        self.rooms.pop(code, None)
        await anyio.to_thread.run_sync(self.store.delete_room, code)
        self.deliver(code, closed_message("closed"))

    async def state(self, code: str) -> tuple[str | None, int]:
        room = await self._room(code)
        return (None, 0) if room is None else (room.state, room.seq)

    async def set_state(self, code: str, state: str) -> int:
        room = await self._room(code)
        assert room is not None
        room.seq += 1
        room.state, seq = state, room.seq
        room.touched = clock()
        self.deliver(code, state_message(state, seq))
        await anyio.to_thread.run_sync(self.store.save_state, code, seq, state)  # after the followers have it
        return seq

    def _sockets(self, code: str, presenter: bool) -> list[Subscriber]:
        """The room's followers, or its driving presenters (all in this process); none once it has expired."""
        if self._live(code) is None:
            return []
        return [s for s in self.local.get(code, ()) if s.presenter == presenter and (s.driving or not presenter)]

    async def followers(self, code: str) -> int:
        return len(self._sockets(code, False))

    async def presenters(self, code: str) -> int:
        return len(self._sockets(code, True))

    async def from_address(self, code: str, address: str) -> int:
        return sum(s.address == address for s in self._sockets(code, False))

    async def quiz(self, code: str) -> dict[str, Any] | None:
        room = self._live(code)
        return None if room is None else room.quiz

    async def set_quiz(self, code: str, quiz: dict[str, Any] | None) -> None:
        room = self._live(code)
        if room is None:
            return
        if quiz is None or room.quiz is None or room.quiz["id"] != quiz["id"]:
            room.votes, room.voters = {}, set()
        room.quiz = quiz

    async def add_vote(self, code: str, quiz_id: str, voters: Iterable[str], choice: int, seconds: float = 0.0) -> bool:
        room = self._live(code)
        voters = list(voters)
        if room is None or room.quiz is None or room.quiz["id"] != quiz_id or room.voters.intersection(voters):
            return False
        room.voters.update(voters)
        room.votes[voters[0]] = (choice, seconds)
        return True

    async def votes(self, code: str, quiz_id: str) -> list[tuple[int, float]]:
        room = self._live(code)
        if room is None or room.quiz is None or room.quiz["id"] != quiz_id:
            return []
        return list(room.votes.values())

    async def vote_of(self, code: str, quiz_id: str, seat: str) -> int | None:
        room = self._live(code)
        if room is None or room.quiz is None or room.quiz["id"] != quiz_id:
            return None
        found = room.votes.get("seat:" + seat)
        return None if found is None else found[0]

    async def take_seat(self, code: str, address: str, seat: str, most: int) -> bool:
        room = self._live(code)
        if room is None:
            return False
        seats = room.seats.setdefault(address, set())
        if seat not in seats:
            if len(seats) >= most:
                return False
            seats.add(seat)
        return True

    async def deck(self, code: str) -> dict[str, Any] | None:
        room = self._live(code)
        return None if room is None else room.deck

    async def set_deck(self, code: str, deck: dict[str, Any] | None) -> None:
        room = self._live(code)
        if room is not None:
            room.deck = deck

    async def run(self, code: str) -> str:
        room = await self._room(code)
        if room is None:
            return ""
        if not room.run:
            room.run = hashlib.sha256(f"{code}\0{room.key_digest}".encode()).hexdigest()[:32]
        return room.run

    async def new_run(self, code: str) -> None:
        room = self._live(code)
        if room is not None:
            room.run = new_seat()

    async def publish(self, code: str, text: str, presenters_only: bool = False) -> None:
        self.deliver(code, text, presenters_only)

    async def log_quiz(self, code: str, entry: dict[str, Any] | None) -> None:
        room = self.rooms.get(code)
        if room is not None:
            room.quiz_log = [] if entry is None else [*room.quiz_log, entry][-limits.MAX_QUIZ_LOG :]

    async def quiz_log(self, code: str) -> list[dict[str, Any]]:
        room = self.rooms.get(code)
        return [] if room is None else list(room.quiz_log)


_SET_STATE = """
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('PUBLISH', KEYS[2], 'A{"state":' .. ARGV[1] .. ',"seq":' .. seq .. '}')
return seq
"""

_VOTE = """
local quiz = redis.call('HGET', KEYS[1], 'quiz_id')
if quiz ~= ARGV[1] then return 0 end
for i = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[3], ARGV[i]) == 1 then return 0 end
end
for i = 3, #ARGV do redis.call('HSET', KEYS[3], ARGV[i], '-') end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[2])
redis.call('EXPIRE', KEYS[2], 43200)
redis.call('EXPIRE', KEYS[3], 43200)
return 1
"""

_SEAT = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


P = ParamSpec("P")
R = TypeVar("R")


def _deadline(
    method: Callable[Concatenate[RedisBroker, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[RedisBroker, P], Coroutine[Any, Any, R]]:
    """A call to Redis with a deadline: Redis's errors, and silence past the deadline, become StoreDown."""

    @functools.wraps(method)
    async def call(self: RedisBroker, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            async with asyncio.timeout(REDIS_DEADLINE_SECONDS):
                return await method(self, *args, **kwargs)
        except self.errors as e:
            raise StoreDown(redis_trouble(e)) from None

    return call


def redis_trouble(e: BaseException) -> str:
    """What went wrong with Redis, in a few words (never its URL: it may hold a password)."""
    if isinstance(e, TimeoutError) or type(e).__name__ == "TimeoutError":
        return f"Redis did not answer in time ({REDIS_TIMEOUT_SECONDS:g} s a command)"
    return f"Redis can't be reached ({str(e)[:200] or type(e).__name__})"


class RedisBroker(Broker):
    """Rooms in Redis; every process subscribes to the rooms' channels and feeds its own sockets."""

    PREFIX = "a3d:"

    def __init__(self, url: str) -> None:
        import redis.asyncio as aioredis  # only with --redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        super().__init__()
        timeouts = {"socket_timeout": REDIS_TIMEOUT_SECONDS, "socket_connect_timeout": REDIS_TIMEOUT_SECONDS}
        self.redis = aioredis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), 1), **timeouts)
        # the pub/sub connection never reconnects by itself: a gap in its messages must be noticed (_read)
        self._listener = aioredis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), 0), **timeouts)
        self.errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        self.process = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._set_state = self.redis.register_script(_SET_STATE)
        self._vote = self.redis.register_script(_VOTE)
        self._seat = self.redis.register_script(_SEAT)
        self._reader: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._counting: set[str] = set()  # rooms whose counts in Redis hold this process's sockets

    def _key(self, code: str, *more: str) -> str:
        return self.PREFIX + "room:" + code + "".join(":" + m for m in more)

    async def start(self) -> None:
        """Subscribe to every room's channel (once per process), before the first socket joins; waits at most
        the deadline (then ready() is False and sockets are told the room store is lost)."""
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REDIS_DEADLINE_SECONDS):
                await self._subscribed.wait()

    def ready(self) -> bool:
        return self._subscribed.is_set()

    async def _read(self) -> None:
        """Feed this process's sockets from Redis, and every WATCH_EVERY seconds ask Redis its run_id: when
        Redis goes away, stops answering or restarts (a gap in the messages), every socket hears {"lost"}
        and connects again; this subscribes again once Redis is back."""
        prefix = len(self.PREFIX + "chan:")
        lost_on: tuple[type[BaseException], ...] = (*self.errors, StoreDown)
        down: float | None = None  # when Redis went away (None: it is here, or never was yet)
        while True:
            pubsub = self._listener.pubsub(ignore_subscribe_messages=True)
            try:
                async with asyncio.timeout(REDIS_DEADLINE_SECONDS):
                    await pubsub.psubscribe(self.PREFIX + "chan:*")
                    run_id = await self._run_id()
                await self._recount()
                self._subscribed.set()
                if down is not None:
                    log.warning("classroom: Redis is back after %.0f s", time.monotonic() - down)
                down, checked = None, time.monotonic()
                while True:
                    message = await pubsub.get_message(timeout=WATCH_EVERY)
                    if message is not None and message.get("type") == "pmessage":
                        code, data = str(message["channel"])[prefix:], str(message["data"])
                        if code in self.local:
                            self.deliver(code, data[1:], presenters_only=data[0] == "P")
                    if time.monotonic() - checked >= WATCH_EVERY:
                        async with asyncio.timeout(REDIS_DEADLINE_SECONDS):
                            if await self._run_id() != run_id:
                                raise ConnectionError("Redis restarted")
                        checked = time.monotonic()
            except lost_on as e:
                if down is None:
                    down = time.monotonic()
                    why = e if isinstance(e, StoreDown) else redis_trouble(e)
                    log.warning("classroom: lost Redis (%s): rooms answer 503 and their pages reconnect", why)
                self._lost()
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(REDIS_TIMEOUT_SECONDS):
                        await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _run_id(self) -> str:
        """Redis's run_id: another one is another Redis (restarted, with all, some or none of its data)."""
        return str((await self.redis.info("server"))["run_id"])

    def _lost(self) -> None:
        """Every socket of this process hears {"lost"} and closes (its page connects again)."""
        self._subscribed.clear()
        for code in list(self.local):
            self.deliver(code, LOST_MESSAGE)

    async def _recount(self) -> None:
        """After an outage: the counts this process wrote before it are written again from its sockets now."""
        for code in list(self._counting):
            await self._counted(code)

    @_deadline
    async def publish(self, code: str, text: str, presenters_only: bool = False) -> None:
        await self.redis.publish(self.PREFIX + "chan:" + code, ("P" if presenters_only else "A") + text)

    @_deadline
    async def create_room(self, code: str, key_digest: str) -> bool:
        rooms = self.PREFIX + "rooms"
        now = time.time()
        await self.redis.zremrangebyscore(rooms, "-inf", now)
        if await self.redis.zcard(rooms) >= limits.MAX_ROOMS:
            raise RoomLimit
        key = self._key(code)
        if not await self.redis.hsetnx(key, "key", key_digest):
            return False
        await self.redis.hset(key, mapping={"seq": 0, "run": new_seat()})
        await self.redis.expire(key, int(room_ttl()))
        await self.redis.zadd(rooms, {code: now + int(room_ttl())})
        return True

    @_deadline
    async def room_key(self, code: str) -> str | None:
        value = await self.redis.hget(self._key(code), "key")
        return None if value is None else str(value)

    @_deadline
    async def close_room(self, code: str) -> None:
        processes = await self.redis.hkeys(self._key(code, "followers"))
        keys = [self._key(code, k) for k in ("followers", "presenters", "votes", "voters", "quizlog")]
        keys += [self._key(code, "addresses", str(p)) for p in processes]
        await self.redis.delete(self._key(code), *keys)
        await self.redis.zrem(self.PREFIX + "rooms", code)
        await self.publish(code, closed_message("closed"))

    @_deadline
    async def state(self, code: str) -> tuple[str | None, int]:
        state, seq = await self.redis.hmget(self._key(code), ["state", "seq"])
        return (None if state is None else str(state)), int(seq or 0)

    @_deadline
    async def set_state(self, code: str, state: str) -> int:
        expires = time.time() + int(room_ttl())
        keys = [self._key(code), self.PREFIX + "chan:" + code, self.PREFIX + "rooms"]
        seq = await self._set_state(keys=keys, args=[state, int(room_ttl()), expires, code])
        return int(seq)

    @_deadline
    async def followers(self, code: str) -> int:
        counts = await self.redis.hvals(self._key(code, "followers"))
        return sum(max(0, int(c)) for c in counts)

    @_deadline
    async def presenters(self, code: str) -> int:
        counts = await self.redis.hvals(self._key(code, "presenters"))
        return sum(max(0, int(c)) for c in counts)

    @_deadline
    async def from_address(self, code: str, address: str) -> int:
        processes = await self.redis.hkeys(self._key(code, "followers"))
        if not processes:
            return 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for p in processes:
                pipe.hget(self._key(code, "addresses", str(p)), address)
            counts = await pipe.execute()
        return sum(int(c or 0) for c in counts)

    @_deadline
    async def _counted(self, code: str) -> None:
        """This process's sockets of the room, written whole: its followers, presenters and followers per
        address (each process has a field or a hash of its own, so a write never depends on an earlier one)."""
        subs = self.local.get(code, set())
        by_address = Counter(s.address for s in subs if not s.presenter)
        followers = sum(by_address.values())
        ttl = int(room_ttl())
        addresses = self._key(code, "addresses", self.process)
        async with self.redis.pipeline(transaction=True) as pipe:
            for key, n in (
                (self._key(code, "followers"), followers),
                (self._key(code, "presenters"), sum(s.presenter and s.driving for s in subs)),
            ):
                if n:
                    pipe.hset(key, self.process, n)
                    pipe.expire(key, ttl)
                else:
                    pipe.hdel(key, self.process)
            pipe.delete(addresses)
            if by_address:
                counts: dict[Any, Any] = dict(by_address)
                pipe.hset(addresses, mapping=counts)
                pipe.expire(addresses, ttl)
            await pipe.execute()
        if subs:
            self._counting.add(code)
        else:
            self._counting.discard(code)

    @_deadline
    async def quiz(self, code: str) -> dict[str, Any] | None:
        text = await self.redis.hget(self._key(code), "quiz")
        return None if not text else dict(json.loads(text))

    @_deadline
    async def set_quiz(self, code: str, quiz: dict[str, Any] | None) -> None:
        key = self._key(code)
        old = await self.redis.hget(key, "quiz_id")
        if quiz is None or old != quiz["id"]:
            await self.redis.delete(self._key(code, "votes"), self._key(code, "voters"))
        if quiz is None:
            await self.redis.hdel(key, "quiz", "quiz_id")
        else:
            await self.redis.hset(key, mapping={"quiz": json.dumps(quiz), "quiz_id": quiz["id"]})

    @_deadline
    async def add_vote(self, code: str, quiz_id: str, voters: Iterable[str], choice: int, seconds: float = 0.0) -> bool:
        keys = [self._key(code), self._key(code, "votes"), self._key(code, "voters")]
        done = await self._vote(keys=keys, args=[quiz_id, f"{choice}:{seconds:.3f}", *voters])
        return bool(done)

    @_deadline
    async def vote_of(self, code: str, quiz_id: str, seat: str) -> int | None:
        if await self.redis.hget(self._key(code), "quiz_id") != quiz_id:
            return None
        found = await self.redis.hget(self._key(code, "votes"), "seat:" + seat)
        return None if found is None else _vote_value(str(found))[0]

    @_deadline
    async def take_seat(self, code: str, address: str, seat: str, most: int) -> bool:
        key = self._key(code, "seats", address)
        taken = await self._seat(keys=[key], args=[seat, most, int(room_ttl())])
        return bool(taken)

    @_deadline
    async def deck(self, code: str) -> dict[str, Any] | None:
        text = await self.redis.hget(self._key(code), "deck")
        return None if not text else dict(json.loads(text))

    @_deadline
    async def set_deck(self, code: str, deck: dict[str, Any] | None) -> None:
        if deck is None:
            await self.redis.hdel(self._key(code), "deck")
        else:
            await self.redis.hset(self._key(code), "deck", json.dumps(deck))

    @_deadline
    async def run(self, code: str) -> str:
        key = self._key(code)
        found = await self.redis.hget(key, "run")
        if found is None and await self.redis.exists(key):  # a room opened before runs were kept
            await self.redis.hsetnx(key, "run", new_seat())
            found = await self.redis.hget(key, "run")
        return str(found or "")

    @_deadline
    async def new_run(self, code: str) -> None:
        await self.redis.hset(self._key(code), "run", new_seat())

    @_deadline
    async def log_quiz(self, code: str, entry: dict[str, Any] | None) -> None:
        key = self._key(code, "quizlog")
        if entry is None:
            await self.redis.delete(key)
            return
        await self.redis.rpush(key, json.dumps(entry))
        await self.redis.ltrim(key, -limits.MAX_QUIZ_LOG, -1)
        await self.redis.expire(key, limits.ROOM_TTL_SECONDS)

    @_deadline
    async def quiz_log(self, code: str) -> list[dict[str, Any]]:
        texts = await self.redis.lrange(self._key(code, "quizlog"), 0, -1)
        return [dict(json.loads(t)) for t in texts]

    @_deadline
    async def votes(self, code: str, quiz_id: str) -> list[tuple[int, float]]:
        if await self.redis.hget(self._key(code), "quiz_id") != quiz_id:
            return []
        return [_vote_value(str(v)) for v in await self.redis.hvals(self._key(code, "votes"))]

    async def close(self) -> None:
        await super().close()
        if self._reader is not None:
            self._reader.cancel()
        self.local.clear()  # this process counts no one now
        with contextlib.suppress(StoreDown):
            await self._recount()
        await self.redis.aclose()
        await self._listener.aclose()


def _vote_value(text: str) -> tuple[int, float]:
    """A vote as Redis keeps it, "choice:seconds"."""
    choice, _, seconds = text.partition(":")
    return int(choice), float(seconds or 0)
