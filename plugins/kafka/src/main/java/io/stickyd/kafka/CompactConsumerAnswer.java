package io.stickyd.kafka;

import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.modern.MemberAssignmentImpl;

/**
 * Reads a compact answer (docs/wire-format.md, "The compact encoding") into the coordinator's
 * {@link GroupAssignment}, checking what {@link ConsumerResponseReader} checks: one member per
 * partition of every listed topic (the dense {@code assignment} array makes "exactly one" hold by
 * construction), member indices in range, every partition assigned, each to a member subscribed to its
 * topic. Anything else throws {@link IllegalStateException} (the assignor's fallback).
 *
 * <p>A member listed as unchanged gets back the very map the group spec gave it, once the array is seen
 * to give it exactly that; the others get their partitions as {@link IntRunsSet}s (no boxed Integer per
 * partition).
 */
final class CompactConsumerAnswer {
    private CompactConsumerAnswer() {
    }

    /** The stats' {@code solver} (the other stats skipped), or null. */
    private static String solver(Msgpack.Reader in) {
        String solver = null;
        for (int fields = in.map(); fields > 0; fields--) {
            if (!in.str().equals("solver")) {
                in.skip();
            } else if (!in.nil()) {
                solver = in.str();
            }
        }
        return solver;
    }

    static GroupAssignment read(byte[] answer, CompactConsumerRequest.Request request, GroupSpec group) {
        byte[] magic = CompactConsumerRequest.MAGIC;
        if (answer.length < magic.length || !Arrays.equals(answer, 0, magic.length, magic, 0, magic.length)) {
            throw new IllegalStateException("answer is not in the compact encoding");
        }
        Msgpack.Reader in = new Msgpack.Reader(answer, magic.length);
        IntBuffer owners = null;
        int[] unchanged = null;
        for (int fields = in.map(); fields > 0; fields--) {
            String key = in.str();
            if (key.equals("assignment")) {
                owners = in.int32View();
            } else if (key.equals("unchanged")) {
                unchanged = new int[in.array()];
                for (int i = 0; i < unchanged.length; i++) {
                    unchanged[i] = (int) in.integer();
                }
            } else if (key.equals("stats")) {
                ConsumerResponseReader.refuseQuickFill(solver(in));
            } else {
                in.skip(); // revoke, target (cooperative only), unassigned (seen as -1 below)
            }
        }
        return assignment(owners, unchanged, request, group);
    }

    /**
     * The assignment that gives slot s to member {@code owners.get(s)} (request order), the members
     * {@code unchanged} keeping the maps they hold, once checked as {@link #read} checks an answer.
     */
    static GroupAssignment assignment(IntBuffer owners, int[] unchanged, CompactConsumerRequest.Request request, GroupSpec group) {
        List<String> memberIds = request.memberIds();
        int[] offsets = offsets(request.partitions());
        if (owners == null || unchanged == null || owners.limit() != offsets[offsets.length - 1]) {
            throw new IllegalStateException("compact answer lacks assignment or unchanged, or its assignment has the wrong length");
        }
        boolean[] same = new boolean[memberIds.size()];
        for (int m : unchanged) {
            if (m < 0 || m >= memberIds.size() || same[m]) {
                throw new IllegalStateException("compact answer: unchanged member index " + m + " out of range or twice");
            }
            same[m] = true;
        }
        // one pass: every slot assigned, unchanged members checked on the arrays, the others' slots counted
        int[] counted = new int[memberIds.size()];
        checkSlots(owners, same, request.claims(), counted);
        // a member whose whole assignment the request held and that the answer keeps needs no map built
        boolean[] kept = new boolean[memberIds.size()];
        int[] start = new int[memberIds.size() + 1];
        for (int m = 0; m < memberIds.size(); m++) {
            kept[m] = same[m] && request.claims().exact()[m];
            start[m + 1] = start[m] + (kept[m] ? 0 : counted[m]);
        }
        // the other members' slots, each member's in ascending order (a counting sort)
        int[] bySlot = new int[start[memberIds.size()]];
        int[] fill = Arrays.copyOf(start, memberIds.size());
        for (int slot = 0; slot < owners.limit(); slot++) {
            int m = owners.get(slot);
            if (!kept[m]) {
                bySlot[fill[m]++] = slot;
            }
        }
        // read only for an unchanged member whose assignment the request did not hold whole
        Map<Uuid, Integer> topicIndex = new HashMap<>();
        if (!allKept(same, kept)) {
            for (int t = 0; t < request.topicIds().size(); t++) {
                topicIndex.put(request.topicIds().get(t), t);
            }
        }
        Map<String, MemberAssignment> members = new HashMap<>((int) Math.ceil(memberIds.size() / 0.75));
        boolean[][] reads = new boolean[request.subscriptions().size()][];
        int most = 0;
        for (int m = 0; m < memberIds.size(); m++) {
            most = Math.max(most, start[m + 1] - start[m]);
        }
        Scratch scratch = new Scratch(most);
        for (int m = 0; m < memberIds.size(); m++) {
            String memberId = memberIds.get(m);
            Map<Uuid, Set<Integer>> partitions = kept[m]
                ? group.memberAssignment(memberId).partitions() // checked on the arrays above
                : same[m]
                ? unchangedMap(group.memberAssignment(memberId).partitions(), m, counted[m], owners, offsets, topicIndex)
                : null;
            if (partitions == null) {
                partitions = runsOf(bySlot, start[m], start[m + 1], offsets, request, reads(reads, request, m), scratch);
            }
            members.put(memberId, new MemberAssignmentImpl(partitions));
        }
        return new GroupAssignment(members);
    }

    /** Every member marked unchanged is kept as the request held it. */
    private static boolean allKept(boolean[] same, boolean[] kept) {
        for (int m = 0; m < same.length; m++) {
            if (same[m] && !kept[m]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Every slot assigned to a member ({@code counted[m]}: how many to member m); and for the unchanged
     * members whose whole assignment the request's {@code owners} held, the answer gives each exactly
     * the slots it held (one pass over the two arrays, no boxed partition).
     */
    private static void checkSlots(IntBuffer owners, boolean[] same, CompactConsumerRequest.Claims claims, int[] counted) {
        int[] held = claims.owners();
        boolean[] exact = claims.exact();
        for (int slot = 0; slot < owners.limit(); slot++) {
            int now = owners.get(slot);
            if (now < 0 || now >= counted.length) {
                throw new IllegalStateException("answer leaves partition slot " + slot + " unassigned or names member " + now);
            }
            counted[now]++;
            int before = held[slot];
            if (before != now && (before >= 0 && same[before] && exact[before] || same[now] && exact[now])) {
                throw new IllegalStateException("a member marked unchanged loses or gains partition slot " + slot);
            }
        }
    }

    /**
     * Whether member m's subscription, as the request sent it, names each topic: one array per distinct
     * subscription, made when a member of it is first read.
     */
    private static boolean[] reads(boolean[][] reads, CompactConsumerRequest.Request request, int m) {
        int subscription = request.memberSubscription()[m];
        if (reads[subscription] == null) {
            reads[subscription] = new boolean[request.topicIds().size()];
            for (int t : request.subscriptions().get(subscription)) {
                reads[subscription][t] = true;
            }
        }
        return reads[subscription];
    }

    private static int[] offsets(int[] partitions) {
        int[] offsets = new int[partitions.length + 1];
        for (int t = 0; t < partitions.length; t++) {
            offsets[t + 1] = offsets[t] + partitions[t];
        }
        return offsets;
    }

    /**
     * The member's own map, once the answer is seen to give it exactly those {@code given} partitions;
     * null when it held more than the request could say (a partition of a topic no member subscribes to
     * any more, or past the topic's end): unchanged within the request, it loses those.
     */
    private static Map<Uuid, Set<Integer>> unchangedMap(Map<Uuid, Set<Integer>> current, int m, int given, IntBuffer owners,
                                                        int[] offsets, Map<Uuid, Integer> topicIndex) {
        int held = 0;
        boolean beyond = false;
        for (Map.Entry<Uuid, Set<Integer>> claim : current.entrySet()) {
            Integer t = topicIndex.get(claim.getKey());
            if (t != null && claim.getValue() instanceof IntRunsSet runs) {
                int inRequest = checkRuns(runs, m, offsets[t], offsets[t + 1] - offsets[t], owners, claim.getKey());
                beyond |= inRequest < runs.size();
                held += inRequest;
                continue;
            }
            for (Integer p : claim.getValue()) {
                if (t == null || p < 0 || p >= offsets[t + 1] - offsets[t]) {
                    beyond = true;
                    continue;
                }
                checkOwn(owners, offsets[t] + p, m, p, claim.getKey());
                held++;
            }
        }
        if (held != given) {
            throw new IllegalStateException("member " + m + " marked unchanged, but given " + given + " partitions, not " + held);
        }
        return beyond ? null : current;
    }

    /** How many of the runs' partitions are in the request (below {@code count}), each checked to be member m's. */
    private static int checkRuns(IntRunsSet runs, int m, int offset, int count, IntBuffer owners, Uuid topicId) {
        int inRequest = 0;
        for (int r = 0; r < runs.runs(); r++) {
            for (int p = runs.first(r); p < Math.min(count, runs.first(r) + runs.count(r)); p++) {
                checkOwn(owners, offset + p, m, p, topicId);
                inRequest++;
            }
        }
        return inRequest;
    }

    private static void checkOwn(IntBuffer owners, int slot, int m, int p, Uuid topicId) {
        if (owners.get(slot) != m) {
            throw new IllegalStateException("member " + m + " marked unchanged, but partition " + p + " of "
                + topicId + " is not its own");
        }
    }

    /**
     * Room for one member's runs, as long as the most slots a member is given: each member's runs are found in one
     * pass over its slots, then copied out per topic.
     */
    private static final class Scratch {
        final int[] firsts;
        final int[] counts;
        final int[] topics;
        /** where topic k's runs start in {@code firsts}/{@code counts} (one past the last topic: the end). */
        final int[] runsFrom;

        Scratch(int slots) {
            firsts = new int[slots];
            counts = new int[slots];
            topics = new int[slots];
            runsFrom = new int[slots + 1];
        }
    }

    /**
     * The member's slots {@code bySlot[from..to)} (ascending) as one {@link IntRunsSet} per topic, each of a topic
     * the member subscribes to ({@code subscribed}, by topic index).
     */
    private static Map<Uuid, Set<Integer>> runsOf(int[] bySlot, int from, int to, int[] offsets,
                                                  CompactConsumerRequest.Request request, boolean[] subscribed, Scratch at) {
        int runs = 0;
        int topics = 0;
        int t = 0;
        for (int i = from; i < to; i++) {
            int slot = bySlot[i];
            if (i == from || slot >= offsets[t + 1]) { // the first slot of a topic
                while (slot >= offsets[t + 1]) {
                    t++;
                }
                if (!subscribed[t]) {
                    throw new IllegalStateException("a member is given topic " + request.topicIds().get(t)
                        + ", which it does not subscribe to");
                }
                at.topics[topics] = t;
                at.runsFrom[topics++] = runs;
            } else if (slot == bySlot[i - 1] + 1) {
                at.counts[runs - 1]++;
                continue;
            }
            at.firsts[runs] = slot - offsets[t];
            at.counts[runs++] = 1;
        }
        at.runsFrom[topics] = runs;
        Map<Uuid, Set<Integer>> out = new HashMap<>((int) Math.ceil(topics / 0.75));
        for (int k = 0; k < topics; k++) {
            Set<Integer> partitions = new IntRunsSet(at.firsts, at.counts, at.runsFrom[k], at.runsFrom[k + 1]);
            out.put(request.topicIds().get(at.topics[k]), partitions);
        }
        return out;
    }
}
