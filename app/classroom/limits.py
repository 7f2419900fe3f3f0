"""Every limit of the classroom, in one place (docs/readme/classroom.md lists the same numbers).

They keep one 2-core server answering a class: a room is a few kB of state, a follower's socket
is a queue of at most FOLLOWER_QUEUE messages, and no client can make the server do unbounded work.
"""

import os

MAX_ROOMS = 100  # rooms open at once on one server (or one Redis): POST /api/rooms answers 429 past it
MAX_FOLLOWERS = 300  # follower sockets per room: the 301st is closed with code 4409
ROOM_TTL_SECONDS = 12 * 3600  # a room nobody drove for 12 hours is closed
MAX_STATE_BYTES = 32 * 1024  # one view state (PUT /api/rooms/{code}/state): 413 past it
MAX_STATE_EXTRAS = 24  # chapter parameters beyond the named fields of a view state
MAX_PARAM_CHARS = 2000  # characters of one chapter parameter (as the page keeps them: state.js MAX_PARAM)
MAX_PUTS_PER_SECOND = 20  # state changes per room and second (a clicker is far slower): 429 past it
MAX_SOCKET_MESSAGE_BYTES = 1024  # one message a follower sends (a vote, a ping): closed with 1009 past it
MAX_SOCKET_MESSAGES_PER_SECOND = 5  # a follower's messages per second, bursts of 10: closed with 4429 past it
SOCKET_BURST = 10
FOLLOWER_QUEUE = 512  # messages waiting for one slow follower: past it the follower is dropped (it reconnects)
MAX_QUIZ_TOKENS = 512  # words a quiz offers (the page's largest sentence)
MAX_QUIZ_LOG = 200  # finished questions a room's quiz summary keeps (the oldest go first)

MAX_LESSON_BYTES = 1024 * 1024  # a lesson's JSON body: 413 past it
MAX_LESSON_VIEWS = 200  # views in one lesson
MAX_LESSON_TITLE = 200  # characters
MAX_NOTE_CHARS = 2000  # characters of one view's note
MAX_LESSONS = 1000  # lessons kept in one data directory: POST answers 429 past it
LESSONS_PAGE = 100  # lessons in one page of GET /api/lessons (?limit= up to MAX_LESSONS_PAGE)
MAX_LESSONS_PAGE = 1000

# One device (client address) in a room (docs/security.md): settable. A school's NAT or proxy puts a
# whole class behind one address, so the defaults are generous: one laptop still cannot stuff the box.
FOLLOWERS_PER_ADDRESS = 60  # follower sockets of one address in one room: more are closed with 4409 ("address_full")
FOLLOWERS_PER_ADDRESS_ENV = "ATTENTION_FOLLOWERS_PER_ADDRESS"  # --followers-per-address
SEATS_PER_ADDRESS = 60  # pages (seats) of one address that may vote in one room: more are refused ("seat_cap")
SEATS_PER_ADDRESS_ENV = "ATTENTION_SEATS_PER_ADDRESS"
VOTES_PER_ADDRESS_ENV = "ATTENTION_VOTES_PER_ADDRESS"  # "1": also one vote per address (default: per seat only)


def followers_per_address() -> int:
    raw = os.environ.get(FOLLOWERS_PER_ADDRESS_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) >= 1 else FOLLOWERS_PER_ADDRESS


def seats_per_address() -> int:
    raw = os.environ.get(SEATS_PER_ADDRESS_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) >= 1 else SEATS_PER_ADDRESS


def one_vote_per_address() -> bool:
    return os.environ.get(VOTES_PER_ADDRESS_ENV, "0") == "1"
