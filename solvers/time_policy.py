"""The time policy: every timing constant of the service and the solvers, each with its reason,
and the one default time limit. Dispatchers, the solver processes and the web process ask here;
nothing else holds a figure about time.

The promise (docs/operating.md, "The time promise"): a request is answered within
max(time_limit_ms, floor) + the response margin, counted from its arrival. The solvers spend the
time limit (the optimal solver its share, the fallback the rest), the web process keeps the margin,
and the floor covers what merely reading, parsing and answering a large request costs.

CPU figures were measured on a 2-core machine with `bench.flow_estimate`, `bench.limits --floor`
and `bench.streams` (bench/RESULTS.md); the estimates are scaled at run time by how slowly the
process is running (solvers/consumer/flow_estimate.py), so a faster or a busier machine moves them.
"""

from __future__ import annotations

# The time limit

DEFAULT_TIME_LIMIT_MS = 2_000
"""A request without `options.time_limit_ms` gets this, through every door: `stickyd solve`,
`solve_consumer`/`solve_streams`, the service (STICKYD_DEFAULT_TIME_LIMIT_MS overrides it there)
and `stickyd pipeline plan`. Two seconds is what a Kafka group coordinator waits comfortably for an
assignor within a rebalance, and it proves 1M partitions x 2,000 members optimal on 2 cores."""
MAX_TIME_LIMIT_MS = 30_000
"""The service caps a request's time_limit_ms to this (STICKYD_MAX_TIME_LIMIT_MS): a solver
process held longer is a solver process other requests wait for."""

# The service's margins and timeouts (defaults of the STICKYD_* settings of the same names)

RESPONSE_MARGIN_MS = 250
"""A solve still running this long past its request's deadline is stopped and the fallback pool
answers: what a solver process needs to notice its deadline, write its answer and the web process
to pass it on."""
FALLBACK_LIMIT_MS = 20_000
"""How long past that the fallback pool may take before the request gets a 503."""
SHUTDOWN_GRACE_S = 10.0
"""On SIGTERM, requests in flight get this long to finish; then their solves are stopped."""
HEADER_TIMEOUT_S = 10.0
"""A connection whose request headers are not complete this long after it opened is closed."""
BODY_TIMEOUT_S = 30.0
"""A request body must arrive completely within this many seconds of its headers, else 408."""

# The consumer dispatcher: the optimal solver's share and what the answer and the fallback cost

OPTIMAL_SHARE = 0.8
"""Part of the time limit the optimal solver may use; the rest is kept for the fallback."""
ANSWER_S_PER_PARTITION = 4e-7
"""time kept, per partition, to build the answer after any solver (and for the quick fill)."""
CONSUMER_ANSWER_S_FIXED = 0.015
"""time kept whatever the size, for the quick fill and the answer after a heuristic that ran out."""
STICKY_S_PER_UNIT = 6e-6
"""what the KIP-54 heuristic costs per unit at most (1M units: about 6 s on a 2-core machine)."""

# The consumer flow's estimate (solvers/consumer/flow_estimate.py): CPU time per network size,
# calibrated with `python -m bench.flow_estimate`

FLOW_S_FIXED = 0.004
"""whatever the size: building the arrays, OR-Tools' set-up."""
FLOW_S_PER_ARC = 1.2e-6
"""per arc of the network: classes, the flow itself, the counts turned back into units (measured
2026-11-28 at 0.3-0.6 us with the even split; the rest covers the lexicographic flow that answers
when loads cannot be even and the second flow of `max_imbalance`: at 1M x 2,000 0.26 s even,
0.57 s lexicographic, 0.68 s with max_imbalance 1, against an estimate of 0.83 s)."""
FLOW_S_PER_UNIT = 0.1e-6
"""per unit (partition to place): the classes' columns and the answer's counts."""
CACHE_SLOWDOWN = 1.15
"""CPU time itself grows when the other core is busy (shared caches and memory bandwidth)."""
AFTER_S_FIXED = 0.003
"""after the optimal solver, whatever the size: checking its answer and building the solution."""
AFTER_S_PER_PARTITION = 0.3e-6
"""after the optimal solver, per partition: the check, the solution and its JSON answer (measured
0.16-0.25 us at 100k-1M partitions, 0.3-0.5 at 10k with the fixed part)."""
AFTER_S_PER_PARTITION_COMPACT = 0.05e-6
"""the same when the answer is written in the compact encoding (the plug-in's): measured 0.016-0.025
us at 1M partitions (2026-11-28, 1M x 2,000, the check, the solution and the compact bytes: 16-25
ms; the JSON answer of the same groups 137-183 ms)."""
EVEN_AT_BOUND_SHARE_OF_FLOW = 0.2
"""the even split at the moves' bound (solvers/flows/even_moves.py: classes, one max flow, the
answer's counts) is estimated at this part of the full flow's estimate, and tried where the full flow
would be late if that fits in what is left of the optimal solver's share (the fallback keeps its own
part of the time limit). 1M x 2,000 unequal after Kafka's assignors (516,000 arcs): 0.11 s quiet
against a flow estimate of 0.83 s, 13.5%; 10,000 x 1,000: 1.0 ms against about 12 ms."""
INCREMENTAL_SHARE_OF_FLOW = 0.5
"""the incremental path (solvers/consumer/incremental.py) gives up after this part of the full flow's
estimate: when it cannot prove its answer the request costs at most that much more (after Kafka's
assignors it sees at once that the claims are far from balanced and leaves in a few percent); when
it can (a leave or a join after stickyd's own optimum, 1M partitions x 2,000 members: 0.08-0.10 s,
11-13% of the estimate on a quiet machine; partitions added to a tenth of the topics, about 670
chains in four rounds: 0.2 s, about 26% quiet) it answers within it, with room for a busy machine
(at a tenth, a leave at 1M ran past it and paid for the full flow as well)."""
MIN_MEASURED_CPU_S = 0.002
"""below this much CPU time since the dispatcher started, wall over CPU says too little:"""
UNMEASURED_SLOWDOWN = 2.0
"""the slowdown assumed then (a small request: its estimate is tens of ms at most)."""

# The Streams stages' estimates (solvers/streams/stage_estimates.py)

FLOW_S_PER_TASK = 10e-6
FLOW_S_PER_TASK_CLIENT = 0.012e-6
FLOW_S_PER_CLIENT_PAIR = 0.6e-6
"""the two flows and the certificate, measured 2026-11-24 (CPU, one core, after the active
network was built in one block and solved level by level where its weighted sum would overflow):
0.07 s at 10k tasks x 100 clients, 0.14 s at 20k x 200, 0.57 s at 10k x 1,000, 0.56 s at 20k x
1,000, 1.04 s at 50k x 1,000, 1.65 s at 100k x 1,000, 3.2 s at 200k x 1,000 (proven optimal
there; it used to be skipped). The tasks' classes and arcs grow with the tasks, the
per-(subtopology, client) nodes with both, the standby pools (one arc per owner and client)
with the clients squared; the figures are 1.4 to 1.9 times these."""
STICKY_S_PER_TASK = 16e-6
"""the sticky heuristic: measured 7-15 us per task from 2k to 200k tasks."""
STREAMS_ANSWER_S_FIXED = 0.01
ANSWER_S_PER_TASK = 3e-6
"""the answer after the sticky heuristic or the quick fill: KIP-441 warm-ups, stats, the response
written as JSON (measured 2.5-2.9 us per task at 10k and 200k tasks)."""

# The floor (service/admission/promise_floor.py): what reading, parsing and answering a request of a
# given size costs, below which no time limit is promised

FREE_UNITS = 10_000
"""partitions or tasks up to which the floor is 0 (the margin covers reading and answering)."""
FREE_BYTES = 1_000_000
"""body bytes up to which reading and parsing count as free."""
MS_PER_MB: dict[str, float] = {"consumer": 10.0, "streams": 67.0}
"""reading and decoding: per MB of body (msgspec/orjson, claims read into columns)."""
MS_PER_UNIT: dict[str, float] = {"consumer": 0.00125, "streams": 0.0045}
"""indexing, the cheapest valid answer and writing it: per partition (consumer) or task (Streams)."""
MS_PER_BODY_MB: dict[str, float] = {"consumer": 116.0, "streams": 245.0}
"""the whole floor per MB of body, for the web process, which knows only the body's size: the
floor of the benchmarks' largest classes (Kafka-like claims; Streams with one standby) over their
body sizes. The deadline the web process keeps until a solver process reports the real one."""
CHEAPEST_MS_PER_BODY_MB: dict[str, float] = {"consumer": 116.0, "streams": 130.0}
"""what the cheapest answer costs a solver process per MB of body (consumer: the floor's figure).
Streams: measured 2026-11-24 00:11 (bench/RESULTS.md "Floor per size") 390 ms of CPU
for the 5.09 MB 200k-task body and 970 ms for the 13.33 MB 500k one (77 and 73 ms per MB), about
1.7 times that: below the Streams floor (about 3 times the CPU alone, kept for 8 requests at
once), so a queued Streams request may wait for a solver process until its floor's deadline less
this cost."""

# The web process's side of the promise (service/http/answering.py): reserves for the answer,
# patience, the queue

REPLY_RESERVE_S = 0.02
"""Kept from the response margin for sending the answer."""
REPLY_S_PER_MB = 0.003
"""and per MB of body, whose answer is of its order (1M partitions: a 12-32 MB body, a 7-19 MB
answer, tens of ms to write to the client and for it to read)."""
PATIENCE_FACTOR = 2.0
"""A solve past its guard is given this many times its body's answer cost to answer itself (its
process answers a spent budget with its quick fill) before it counts as stuck and the fallback
pool parses the body again: a loaded machine makes every stage slower, not only the first."""
CHEAP_S = 0.05
"""A request no solver process could take in time goes to the fallback pool only when its
cheapest answer costs at most this: every core is busy with the solver processes then, and a
third large job would make all three late."""
START_RESERVE_S = 0.02
"""A queued request must start at least this long before its guard, besides its answer's cost:
it waits for a solver process as long as it can still be answered within the promise."""

# The solver processes (service/processes/pool.py): stopping a job, handing it over, closing

INTERRUPT_WAIT_S = 0.2
"""How long an interrupted job may take to stop before its process is killed."""
HAND_OFF_POLL_S = 0.05
"""Past its patience, a job is handed over only once the fallback pool has a process free: how
often that is looked at meanwhile."""
CLOSE_WAIT_S = 0.5
"""On close, how long the processes (all at once) get to exit after their stdin is closed."""

# Inside a solver process (service/processes/solver_process.py)

DEADLINE_TOLERANCE_S = 0.001
"""The parent is told a job's deadline only when it is further than this from the one the parent
expected (its byte scan of time_limit_ms was wrong): one frame less per request otherwise."""

# Inside a Kafka client: the kafka-python assignor (client/assignor.py)

ASSIGNOR_TIMEOUT_MS = 1_000
"""How long the group leader waits for stickyd's answer inside a rebalance before it solves in
its own process: well inside Kafka's `max.poll.interval.ms` and `rebalance.timeout.ms`."""
ASSIGNOR_TIME_LIMIT_MS = 500
"""The time limit the assignor asks of the service: half its timeout, the rest for the round trip."""
ASSIGNOR_FALLBACK_TIME_LIMIT_MS = 200
"""The time limit of the solve in the leader's own process when the service did not answer."""

# Balance by load and per topic (solvers/consumer/load/): the exact models' shares and build costs

LOAD_EXACT_SHARE = 0.6
"""Part of the balanced solvers' share (OPTIMAL_SHARE) the exact load model may use; the rest is
kept for the heuristic's answer."""
LOAD_BUILD_S_PER_PAIR = 1e-5
"""What building the exact load model costs per (unit, member) pair, at most (about 3.5 us
measured): no model is built that could not be solved before the deadline."""
PER_TOPIC_BUILD_S_PER_PAIR = 1e-5
"""What building the per-topic CP-SAT model costs per pair, at most: none is built that could not
be solved in time."""
LOAD_REPAIR_SHARE = 0.3
"""Part of what is left of the budget the load heuristic's repair of the bottleneck may use."""

# Watching a Kafka cluster: the partitions' produce rates behind `partition_weights: "live"` (service/watch/)

WATCH_INTERVAL_S = 10.0
"""How often the service reads every partition's end offset (one ListOffsets and one Metadata
request per round: cheap for the cluster, and a rate follows a change within a few rounds)."""
WATCH_WINDOW_S = 60.0
"""The span a rate is measured over: long enough that a producer's batching (KIP-480 sticks to one
partition per batch) evens out, short enough that a shifted load shows within a minute."""
WATCH_REQUEST_TIMEOUT_S = 10.0
"""How long one Admin API request of the watcher may take; a round that overruns counts as a failed sample."""
WATCH_STOP_S = 15.0
"""How long shutting the service down waits for the watcher's thread (a request in flight finishes)."""
SNAPSHOT_RATE_WINDOW_S = 5.0
"""`stickyd snapshot`: the default time between its two readings of the end offsets."""
WATCH_COMPARE_TIME_LIMIT_MS = 300
"""GET /v1/cluster/groups: the time limit of each of the two what-if solves (balance count, balance
load) stickyd runs per watched group; an answer is kept until the next sample or a changed assignment."""

CPSAT_FIRST_TRY_SHARE = 0.75
"""The Streams certificate (solvers/streams/cpsat_bound.py) gives each level this share of what is
left to CP-SAT with the full linear relaxation, then the rest to its default one. With the active
flow's optimal face held, the first proves every 400 x 10 and 1,000 x 20 restore-cost probe of
bench.restore.proofs in 0.05 to 1.5 s; the second proved some faster before the face was held."""
