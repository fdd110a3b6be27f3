package io.stickyd.kafka;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
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
 * {@link GroupAssignment}, checking what {@link ConsumerResponseReader} checks: member and topic
 * indices in range, each partition exists, belongs to a topic the member subscribes to, and goes to
 * exactly one member, every partition of every listed topic assigned. Anything else throws
 * {@link IllegalStateException} (the assignor's fallback).
 *
 * <p>A member listed as unchanged gets back the very map the group spec gave it; the others get
 * their partitions as {@link IntRunsSet}s (no boxed Integer per partition).
 */
final class CompactConsumerAnswer {
    private CompactConsumerAnswer() {
    }

    static GroupAssignment read(byte[] answer, CompactConsumerRequest.Request request, GroupSpec group) {
        byte[] magic = CompactConsumerRequest.MAGIC;
        if (answer.length < magic.length || !Arrays.equals(answer, 0, magic.length, magic, 0, magic.length)) {
            throw new IllegalStateException("answer is not in the compact encoding");
        }
        Msgpack.Reader in = new Msgpack.Reader(answer, magic.length);
        int[] runs = null;
        int[] unchanged = null;
        for (int fields = in.map(); fields > 0; fields--) {
            String key = in.str();
            if (key.equals("assignment")) {
                runs = in.int32s();
            } else if (key.equals("unchanged")) {
                unchanged = new int[in.array()];
                for (int i = 0; i < unchanged.length; i++) {
                    unchanged[i] = (int) in.integer();
                }
            } else {
                in.skip(); // revoke, target (cooperative only), unassigned (checked below), stats
            }
        }
        if (runs == null || unchanged == null || runs.length % 4 != 0) {
            throw new IllegalStateException("compact answer lacks assignment or unchanged");
        }
        List<String> memberIds = request.memberIds();
        int topicCount = request.topicIds().size();
        BitSet[] taken = new BitSet[topicCount];
        for (int t = 0; t < topicCount; t++) {
            taken[t] = new BitSet(request.partitions()[t]);
        }
        Map<Uuid, Integer> topicIndex = new HashMap<>();
        for (int t = 0; t < topicCount; t++) {
            topicIndex.put(request.topicIds().get(t), t);
        }
        Map<String, MemberAssignment> members = new HashMap<>();
        for (int m : unchanged) {
            if (m < 0 || m >= memberIds.size() || members.containsKey(memberIds.get(m))) {
                throw new IllegalStateException("compact answer: unchanged member index " + m + " out of range or twice");
            }
            Map<Uuid, Set<Integer>> current = group.memberAssignment(memberIds.get(m)).partitions();
            markCurrent(current, request, topicIndex, taken);
            members.put(memberIds.get(m), new MemberAssignmentImpl(current));
        }
        Map<Long, List<int[]>> perMemberTopic = groupRuns(runs, request, group, members.keySet(), taken);
        Map<String, Map<Uuid, Set<Integer>>> built = new HashMap<>();
        for (Map.Entry<Long, List<int[]>> entry : perMemberTopic.entrySet()) {
            int m = (int) (entry.getKey() >>> 32);
            int t = (int) (long) entry.getKey();
            List<int[]> list = entry.getValue();
            list.sort((a, b) -> Integer.compare(a[0], b[0]));
            int[] firsts = new int[list.size()];
            int[] counts = new int[list.size()];
            for (int i = 0; i < firsts.length; i++) {
                firsts[i] = list.get(i)[0];
                counts[i] = list.get(i)[1];
            }
            built.computeIfAbsent(memberIds.get(m), id -> new HashMap<>()).put(request.topicIds().get(t), new IntRunsSet(firsts, counts));
        }
        for (String memberId : memberIds) {
            members.computeIfAbsent(memberId, id -> new MemberAssignmentImpl(built.getOrDefault(id, new HashMap<>())));
        }
        for (int t = 0; t < topicCount; t++) {
            if (taken[t].cardinality() != request.partitions()[t]) {
                throw new IllegalStateException("answer leaves partitions of topic " + request.topicIds().get(t) + " unassigned");
            }
        }
        return new GroupAssignment(members);
    }

    private static void markCurrent(
        Map<Uuid, Set<Integer>> current, CompactConsumerRequest.Request request, Map<Uuid, Integer> topicIndex, BitSet[] taken) {
        for (Map.Entry<Uuid, Set<Integer>> claim : current.entrySet()) {
            int t = topicIndex.getOrDefault(claim.getKey(), -1);
            if (t < 0) {
                if (claim.getValue().isEmpty()) {
                    continue;
                }
                throw new IllegalStateException("unchanged member holds a topic the request does not list: " + claim.getKey());
            }
            for (Integer p : claim.getValue()) {
                if (p < 0 || p >= request.partitions()[t] || taken[t].get(p)) {
                    throw new IllegalStateException("partition " + p + " of " + claim.getKey() + " out of range or given twice");
                }
                taken[t].set(p);
            }
        }
    }

    /** The runs by (member, topic), each checked against the request and marked as taken. */
    private static Map<Long, List<int[]>> groupRuns(
        int[] runs, CompactConsumerRequest.Request request, GroupSpec group, Set<String> unchanged, BitSet[] taken) {
        Map<Long, List<int[]>> out = new HashMap<>();
        List<String> memberIds = request.memberIds();
        for (int i = 0; i < runs.length; i += 4) {
            int m = runs[i];
            int t = runs[i + 1];
            int first = runs[i + 2];
            int count = runs[i + 3];
            if (m < 0 || m >= memberIds.size() || t < 0 || t >= request.topicIds().size() || unchanged.contains(memberIds.get(m))) {
                throw new IllegalStateException("compact answer: run " + i / 4 + " names member " + m + ", topic " + t);
            }
            Uuid topicId = request.topicIds().get(t);
            if (!group.memberSubscription(memberIds.get(m)).subscribedTopicIds().contains(topicId)) {
                throw new IllegalStateException("member " + memberIds.get(m) + " given unsubscribed topic " + topicId);
            }
            long end = (long) first + count;
            if (first < 0 || count < 1 || end > request.partitions()[t] || taken[t].nextSetBit(first) >= 0 && taken[t].nextSetBit(first) < end) {
                throw new IllegalStateException("partitions " + first + "+" + count + " of " + topicId + " out of range or given twice");
            }
            taken[t].set(first, (int) end);
            out.computeIfAbsent(((long) m << 32) | t, k -> new ArrayList<>()).add(new int[] {first, count});
        }
        return out;
    }
}
