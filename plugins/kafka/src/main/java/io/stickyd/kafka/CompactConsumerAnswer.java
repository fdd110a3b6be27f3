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
        Map<Uuid, Integer> topicIndex = new HashMap<>();
        for (int t = 0; t < request.topicIds().size(); t++) {
            topicIndex.put(request.topicIds().get(t), t);
        }
        Map<String, MemberAssignment> members = new HashMap<>();
        for (int m = 0; m < memberIds.size(); m++) {
            String memberId = memberIds.get(m);
            Map<Uuid, Set<Integer>> partitions = kept[m]
                ? group.memberAssignment(memberId).partitions() // checked on the arrays above
                : same[m]
                ? unchangedMap(group.memberAssignment(memberId).partitions(), m, counted[m], owners, offsets, topicIndex)
                : null;
            if (partitions == null) {
                partitions = runsOf(bySlot, start[m], start[m + 1], offsets, request, group.memberSubscription(memberId).subscribedTopicIds());
            }
            members.put(memberId, new MemberAssignmentImpl(partitions));
        }
        return new GroupAssignment(members);
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

    /** The member's slots {@code bySlot[from..to)} (ascending) as one {@link IntRunsSet} per topic. */
    private static Map<Uuid, Set<Integer>> runsOf(int[] bySlot, int from, int to, int[] offsets,
                                                  CompactConsumerRequest.Request request, Set<Uuid> subscribed) {
        Map<Uuid, Set<Integer>> out = new HashMap<>();
        int i = from;
        int t = 0;
        while (i < to) {
            while (bySlot[i] >= offsets[t + 1]) {
                t++;
            }
            Uuid topicId = request.topicIds().get(t);
            if (!subscribed.contains(topicId)) {
                throw new IllegalStateException("a member is given topic " + topicId + ", which it does not subscribe to");
            }
            int end = i;
            int runs = 0;
            while (end < to && bySlot[end] < offsets[t + 1]) {
                runs += end == i || bySlot[end] != bySlot[end - 1] + 1 ? 1 : 0;
                end++;
            }
            int[] firsts = new int[runs];
            int[] counts = new int[runs];
            int r = -1;
            for (int k = i; k < end; k++) {
                if (k == i || bySlot[k] != bySlot[k - 1] + 1) {
                    firsts[++r] = bySlot[k] - offsets[t];
                }
                counts[r]++;
            }
            out.put(topicId, new IntRunsSet(firsts, counts));
            i = end;
        }
        return out;
    }
}
