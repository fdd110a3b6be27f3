package io.stickyd.kafka;

import java.util.Arrays;

/**
 * A group of unequal subscriptions solved in the broker ({@code stickyd.unequal.subscriptions=broker})
 * when an even split moves no more partitions than every even split must: the service's max flow at the
 * moves' bound (solvers/flows/even_moves.py), on the arrays the compact request is built from.
 *
 * <p>Balanced: every member that can take partitions gets the even share or one more (with every
 * partition weighing the same, the least sum of squared loads, when any assignment has it). Fewest
 * moves: a member holding h partitions over the share gives up h - share of them, one less if it is among
 * those keeping one more, and no even split moves fewer. One max flow sends exactly that through the topics
 * the members hold, and the partitions nobody holds, to the members short of the share that read those
 * topics; if it fills every share, the answer is optimal. If not (an even split would need a chain of
 * give-ups, or none exists), null: the service is asked. A member keeps its lowest-numbered partitions
 * of a topic and the ones handed out go, lowest first, to the members in id order, as the service does;
 * which member gives up or takes how many of a topic is this flow's choice, so where optima tie the answer
 * may differ from the service's, never its balance or its moves.
 */
final class EvenSplit {
    /** Members x topics at most: the tables of what each member holds of each topic are that large (16 MB each at most). */
    static final long MAX_CELLS = 4_000_000;

    private EvenSplit() {
    }

    /**
     * The optimum, or null: a partition with two claimants, a member that cannot reach the share, a chain
     * needed, or more than {@link #MAX_CELLS} members x topics.
     */
    static EqualSubscriptions.Answer solve(CompactConsumerRequest.Request request) {
        int members = request.memberIds().size();
        int topics = request.topicIds().size();
        if (!request.oneClaimantEach() || (long) members * topics > MAX_CELLS) {
            return null;
        }
        int[] partitions = request.partitions();
        int[] offsets = new int[topics + 1];
        for (int t = 0; t < topics; t++) {
            offsets[t + 1] = offsets[t] + partitions[t];
        }
        boolean[][] reads = new boolean[request.subscriptions().size()][topics];
        for (int s = 0; s < reads.length; s++) {
            for (int t : request.subscriptions().get(s)) {
                reads[s][t] = true;
            }
        }
        // what each member holds of the topics it reads; a claim on any other topic is handed out
        int[] owners = request.claims().owners().clone();
        int[] held = new int[members * topics];
        int[] holds = new int[members];
        boolean[] dropped = new boolean[members];
        int[] free = new int[topics];
        for (int t = 0; t < topics; t++) {
            for (int slot = offsets[t]; slot < offsets[t + 1]; slot++) {
                int m = owners[slot];
                if (m >= 0 && reads[request.memberSubscription()[m]][t]) {
                    held[m * topics + t]++;
                    holds[m]++;
                } else {
                    if (m >= 0) {
                        dropped[m] = true;
                    }
                    owners[slot] = -1;
                    free[t]++;
                }
            }
        }
        long total = offsets[topics];
        int live = 0;
        long[] capacity = new long[members];
        for (int m = 0; m < members; m++) {
            for (int t : request.subscriptions().get(request.memberSubscription()[m])) {
                capacity[m] += partitions[t];
            }
            live += capacity[m] > 0 ? 1 : 0;
        }
        if (live == 0) {
            return null;
        }
        int share = (int) (total / live);
        int extra = (int) (total - (long) share * live);
        int over = 0;
        for (int m = 0; m < members; m++) {
            if (capacity[m] > 0 && capacity[m] < share) {
                return null; // a member that cannot reach the even share: the service balances it otherwise
            }
            over += holds[m] > share ? 1 : 0;
        }
        Flow flow = flow(request, reads, held, holds, free, capacity, share, extra, over);
        if (flow == null) {
            return null;
        }
        return answer(flow, owners, offsets, dropped, topics);
    }

    /** The max flow's network, solved; null when it does not fill every member's share. */
    private static Flow flow(CompactConsumerRequest.Request request, boolean[][] reads, int[] held, int[] holds, int[] free,
                             long[] capacity, int share, int extra, int over) {
        int members = holds.length;
        int topics = free.length;
        // fewer slots of one more than members over the share: the flow picks who keeps one more
        boolean picked = extra < over;
        int source = members + topics;
        int sink = source + 1;
        int spare = source + 2;
        Flow flow = new Flow(spare + 1, members, topics);
        long needed = 0;
        long filled = 0;
        for (int m = 0; m < members; m++) {
            boolean isOver = holds[m] > share;
            int mustGive = isOver ? holds[m] - share - (picked ? 0 : 1) : 0;
            if (mustGive > 0) {
                // a member holding too many gives up what it must ...
                flow.arc(source, m, mustGive);
                needed += mustGive;
                // ... from any topic it holds
                for (int t = 0; t < topics; t++) {
                    flow.giveArc[m * topics + t] = held[m * topics + t] > 0 ? flow.arc(m, members + t, held[m * topics + t]) : -1;
                }
            }
            boolean taker = capacity[m] > 0 && !isOver;
            if (taker && share > holds[m]) {
                // every member ends with the even share ...
                flow.arc(m, sink, share - holds[m]);
                filled += share - holds[m];
            }
            if (picked ? isOver : taker) {
                // ... or one more: kept by a member over the share, or taken by one at most at the share
                flow.arc(m, spare, 1);
            }
        }
        int left = picked ? extra : extra - over;
        flow.arc(spare, sink, left);
        filled += left;
        for (int t = 0; t < topics; t++) {
            // partitions nobody holds (new ones, or a leaving member's) are all handed out
            flow.arc(source, members + t, free[t]);
            needed += free[t];
        }
        for (int m = 0; m < members; m++) {
            if (capacity[m] > 0 && holds[m] <= share) {
                boolean[] subscribed = reads[request.memberSubscription()[m]];
                for (int t = 0; t < topics; t++) {
                    // a member may take from the topics it subscribes to
                    flow.takeArc[m * topics + t] = subscribed[t] ? flow.arc(members + t, m, share + 1) : -1;
                }
            }
        }
        // every partition given up or free finds a member, and every member ends even
        return needed == filled && flow.maxFlow(source, sink) == needed ? flow : null;
    }

    /** The owners the flow gives: members keep their lowest-numbered partitions of a topic, the rest dealt in id order. */
    private static EqualSubscriptions.Answer answer(Flow flow, int[] owners, int[] offsets, boolean[] dropped, int topics) {
        int members = dropped.length;
        boolean[] changed = Arrays.copyOf(dropped, members);
        for (int t = 0; t < topics; t++) {
            // a member over the share gives up its highest-numbered partitions of the topic
            int[] giving = new int[members];
            for (int m = 0; m < members; m++) {
                int arc = flow.giveArc[m * topics + t];
                giving[m] = arc >= 0 ? flow.flowOn(arc) : 0;
                changed[m] |= giving[m] > 0;
            }
            for (int slot = offsets[t + 1] - 1; slot >= offsets[t]; slot--) {
                int m = owners[slot];
                if (m >= 0 && giving[m] > 0) {
                    owners[slot] = -1;
                    giving[m]--;
                }
            }
            // the free partitions, lowest first, to the members taking from the topic, in id order
            int slot = offsets[t];
            for (int m = 0; m < members; m++) {
                int arc = flow.takeArc[m * topics + t];
                int take = arc >= 0 ? flow.flowOn(arc) : 0;
                changed[m] |= take > 0;
                for (; take > 0 && slot < offsets[t + 1]; slot++) {
                    if (owners[slot] < 0) {
                        owners[slot] = m;
                        take--;
                    }
                }
                if (take > 0) {
                    throw new IllegalStateException("even split: topic " + t + " has fewer free partitions than its flow hands out");
                }
            }
        }
        int[] unchanged = new int[members];
        int same = 0;
        for (int m = 0; m < members; m++) {
            if (!changed[m]) {
                unchanged[same++] = m;
            }
        }
        return new EqualSubscriptions.Answer(owners, Arrays.copyOf(unchanged, same));
    }

    /** Dinic's max flow over arcs stored in pairs (an arc, then its reverse), with the arcs that carry the answer. */
    private static final class Flow {
        final int[] giveArc;
        final int[] takeArc;
        private final int nodes;
        private int[] head;
        private int[] next = new int[64];
        private int[] to = new int[64];
        private int[] cap = new int[64];
        private int[] original = new int[64];
        private int arcs;
        private int[] level;
        private int[] cursor;

        Flow(int nodes, int members, int topics) {
            this.nodes = nodes;
            this.head = new int[nodes];
            Arrays.fill(head, -1);
            this.giveArc = new int[members * topics];
            this.takeArc = new int[members * topics];
            Arrays.fill(giveArc, -1);
            Arrays.fill(takeArc, -1);
        }

        int arc(int from, int into, int capacity) {
            if (arcs + 2 > to.length) {
                int grown = 2 * to.length;
                next = Arrays.copyOf(next, grown);
                to = Arrays.copyOf(to, grown);
                cap = Arrays.copyOf(cap, grown);
                original = Arrays.copyOf(original, grown);
            }
            int arc = arcs;
            link(from, into, capacity);
            link(into, from, 0);
            return arc;
        }

        private void link(int from, int into, int capacity) {
            to[arcs] = into;
            cap[arcs] = capacity;
            original[arcs] = capacity;
            next[arcs] = head[from];
            head[from] = arcs++;
        }

        int flowOn(int arc) {
            return original[arc] - cap[arc];
        }

        long maxFlow(int source, int sink) {
            long total = 0;
            level = new int[nodes];
            cursor = new int[nodes];
            int[] queue = new int[nodes];
            while (true) {
                Arrays.fill(level, -1);
                level[source] = 0;
                int read = 0;
                int write = 0;
                queue[write++] = source;
                while (read < write) {
                    int u = queue[read++];
                    for (int a = head[u]; a >= 0; a = next[a]) {
                        if (cap[a] > 0 && level[to[a]] < 0) {
                            level[to[a]] = level[u] + 1;
                            queue[write++] = to[a];
                        }
                    }
                }
                if (level[sink] < 0) {
                    return total;
                }
                System.arraycopy(head, 0, cursor, 0, nodes);
                for (int pushed; (pushed = push(source, sink, Integer.MAX_VALUE)) > 0; ) {
                    total += pushed;
                }
            }
        }

        private int push(int u, int sink, int limit) {
            if (u == sink) {
                return limit;
            }
            for (; cursor[u] >= 0; cursor[u] = next[cursor[u]]) {
                int a = cursor[u];
                if (cap[a] > 0 && level[to[a]] == level[u] + 1) {
                    int pushed = push(to[a], sink, Math.min(limit, cap[a]));
                    if (pushed > 0) {
                        cap[a] -= pushed;
                        cap[a ^ 1] += pushed;
                        return pushed;
                    }
                }
            }
            return 0;
        }
    }
}
