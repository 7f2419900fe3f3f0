"""Every limit the API enforces, in one place (README "Limits" lists the same numbers).

They keep one request's work and memory bounded on a 2-core machine: the largest request
(512 tokens, 12 heads) computes in well under a second, and at most COMPUTE_SLOTS requests
compute at once, so a class of 30 sending it together queues instead of exhausting memory.
"""

MAX_TOKENS = 512  # n: rows of q, k, v (BERT's and GPT-2's context is 512 or more); a sentence's every n × n cell
# A long sentence (a decoder's prompt): up to MAX_LONG_TOKENS, within the model's context. Its view sends the
# rows it focuses on whole and the n × n table as a summary in blocks (app.lod: detail "summary"), never every cell.
MAX_LONG_TOKENS = 4096
MAX_ROWS = 64  # rows one summary answer sends whole (each n numbers per stage)
MAX_TOP_K = 32  # strongest keys per query a summary may ask for (its default: app.lod.TOP, 8)
MAX_HEADS = 16  # h: the leading axis of 3-D q, k, v
MAX_DIM = 1024  # d_k and d_v
MAX_INPUT_VALUES = 3 * 8 * 512 * 64  # numbers in q, k and v together (786,432)
MAX_CELLS = 12 * 512 * 512  # h·n·n, cells of each n×n stage (3,145,728: 12 heads × 512²)
MAX_TOKEN_CHARS = 100  # characters in one token label
MAX_BODY_BYTES = 32 * 1024 * 1024  # request body, JSON or binary frame
COMPUTE_SLOTS = 2  # requests computing at once; the rest wait their turn
PARSE_SLOTS = 2  # large bodies parsed into numbers at once (a 6 MB JSON body briefly takes ~100 MB as lists)

# Sentence mode (app/model): a pretrained model's own attention for a typed sentence.
# Tokens per sentence are capped by the model's context and MAX_TOKENS (512 for all-MiniLM-L6-v2).
MAX_SENTENCE_CHARS = 40_000  # characters of a sentence, checked before tokenizing (4,096 tokens of prose fit)
MAX_OVERVIEW_TOKENS = 64  # tokens for POST /api/heads: 6·12·64² ≈ 295k weights, ≈ 1.6 MB of JSON at most
OVERVIEW_DECIMALS = 3  # /api/heads rounds weights to this many decimals to keep its JSON small
MODEL_CACHE_SENTENCES = 8  # recent sentences whose per-layer Q, K, V are kept (≤ 16 MB each at 512 tokens)
# ... and at most this many bytes of them per model: a decoder's trace is larger (SmolLM2, 30 layers: ~56 MB
# at 300 tokens, ~96 MB at 512), and 8 long ones would hold ~770 MB; the newest is always kept
MODEL_CACHE_BYTES = 192 << 20
# answers that depend on their request only (a chapter's numbers, Look inside's), the last ones made, kept whole
# (app.web.transport.KEPT): what a class's phones ask for at once is computed once; one answer ≤ 1/8 of it
KEPT_ANSWER_BYTES = 32 << 20
MAX_ROLLOUT_TOKENS = 64  # tokens for POST /api/rollout: L × n × n shares (30 · 64² ≈ 123k for SmolLM2)
FLOW_MAX_WORK = 10_000_000  # edges its maximum flows run over (app.model.rollout.flow_work): 1–2 s here
# ... past it, flow answers the focus's paths only (no table per layer), up to this work (rollout.focus_work):
# 2.1 × 10⁷ edges (SmolLM2's 30 layers at 64 tokens) take about 2 s of one core (95–110 ns an edge,
# docs/inside.md): both models' flows reach rollout's 64 tokens
FLOW_FOCUS_MAX_WORK = 21_000_000

# The server on a school's LAN (app/web/server.py; docs/security.md): what one device may hold or ask for.
# Each can be changed with the environment variable named beside it (a whole number of seconds or a count).
HEADER_TIMEOUT_SECONDS = 5  # ATTENTION_HEADER_TIMEOUT: a request's headers, from its first byte (or the connection)
MAX_HEADER_BYTES = 16 * 1024  # ATTENTION_MAX_HEADER_BYTES: request line and headers together; 431 past it
BODY_WINDOW_SECONDS = 5  # a request body must bring BODY_MIN_BYTES_PER_SECOND over each window of this length
BODY_MIN_BYTES_PER_SECOND = 1024  # ATTENTION_BODY_MIN_RATE: slower bodies are dropped (408)
IDLE_TIMEOUT_SECONDS = 20  # ATTENTION_IDLE_TIMEOUT: a kept-alive connection with no new request is closed
CONNECTIONS_PER_ADDRESS = 64  # ATTENTION_CONNECTIONS_PER_ADDRESS: open at once from one address; more are closed
CONNECTION_RATE = 20  # ATTENTION_CONNECTION_RATE: new connections a second per address (bursts of 3x)
REQUEST_RATE = 50  # ATTENTION_REQUEST_RATE: requests a second per address (bursts of 4x); 429 past it
WS_MAX_MESSAGE_BYTES = 4096  # any WebSocket frame past this is refused while its header is read (never buffered)

# Writing with a decoder (POST /api/generate, the notebook's write()).
MAX_PROMPT_CHARS = 40_000  # characters of a prompt, checked before tokenizing
MAX_PROMPT_TOKENS = MAX_LONG_TOKENS  # the prompt after the chat template, in tokens (and within the model's context)
MAX_NEW_TOKENS = 256  # tokens one writing may add
