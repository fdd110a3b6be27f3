package io.stickyd.kafka;

import java.lang.ref.WeakReference;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.Uuid;

/**
 * Each member's current assignment as flat arrays, kept from one {@code assign} call to the next.
 *
 * <p>The group coordinator hands assignors immutable assignment maps and keeps a member's map while its
 * target assignment does not change, so a map seen before (the same object) is read from the arrays
 * made the first time instead of walking its sets again: at a million partitions, one small set per
 * topic per member, that walk is most of the cost of building the request. A member whose assignment
 * changed arrives as a new map and is read in full. The maps are held weakly: an entry whose map the
 * coordinator dropped is swept once the entries have doubled since the last sweep. Thread-safe.
 */
final class HeldPartitions {
    private static final int LAYOUTS_KEPT = 8;

    /** One member's partitions: {@code topics[k]} holds {@code partitions[start(k)..ends[k])}. */
    static final class Held {
        private final WeakReference<Map<Uuid, Set<Integer>>> source;
        final Uuid[] topics;
        final int[] ends;
        final int[] partitions;
        private volatile Resolved resolved = new Resolved(-1, new int[0]);

        private Held(Map<Uuid, Set<Integer>> source, Uuid[] topics, int[] ends, int[] partitions) {
            this.source = new WeakReference<>(source);
            this.topics = topics;
            this.ends = ends;
            this.partitions = partitions;
        }

        int start(int k) {
            return k == 0 ? 0 : ends[k - 1];
        }

        /** Per topic k, its index in the request's topic list {@code layout} (-1: not listed). */
        int[] topicIndices(long layout, Map<Uuid, Integer> topicIndex) {
            Resolved known = resolved;
            if (known.layout() == layout) {
                return known.indices();
            }
            int[] indices = new int[topics.length];
            for (int k = 0; k < topics.length; k++) {
                indices[k] = topicIndex.getOrDefault(topics[k], -1);
            }
            resolved = new Resolved(layout, indices);
            return indices;
        }
    }

    private record Resolved(long layout, int[] indices) {
    }

    private record Layout(List<Uuid> topics, long number) {
    }

    private final ConcurrentHashMap<String, Held> byMember = new ConcurrentHashMap<>();
    private final Deque<Layout> layouts = new ArrayDeque<>();
    private final AtomicLong reads = new AtomicLong();
    private long layoutsMade;
    private volatile int sweptAt = 1024;

    /** {@code map} (member {@code memberId}'s assignment) as arrays, read again only when it is a new map. */
    Held of(String memberId, Map<Uuid, Set<Integer>> map) {
        Held held = byMember.get(memberId);
        if (held != null && held.source.get() == map) {
            return held;
        }
        held = read(map);
        reads.incrementAndGet();
        byMember.put(memberId, held);
        if (byMember.size() > 2 * sweptAt) {
            byMember.values().removeIf(entry -> entry.source.get() == null);
            sweptAt = Math.max(1024, byMember.size());
        }
        return held;
    }

    /**
     * A number naming the request's topic list (ids in order): the same number while requests list
     * the same topics in the same order (the last few lists are remembered), so that each member's
     * topics are looked up once per list.
     */
    synchronized long layout(List<Uuid> topicIds) {
        for (Layout known : layouts) {
            if (known.topics().equals(topicIds)) {
                return known.number();
            }
        }
        Layout made = new Layout(List.copyOf(topicIds), layoutsMade++);
        layouts.addFirst(made);
        if (layouts.size() > LAYOUTS_KEPT) {
            layouts.removeLast();
        }
        return made.number();
    }

    /** How many maps were read in full so far (the rest came from the arrays). */
    long reads() {
        return reads.get();
    }

    /** The map read by iteration, never trusting its sizes (as the request reads the coordinator's sets). */
    private static Held read(Map<Uuid, Set<Integer>> map) {
        Uuid[] topics = new Uuid[Math.max(4, map.size())];
        int[] ends = new int[topics.length];
        int sized = 0;
        for (Set<Integer> partitions : map.values()) {
            sized += partitions.size();
        }
        int[] partitions = new int[Math.max(16, sized)];
        int k = 0;
        int used = 0;
        for (Map.Entry<Uuid, Set<Integer>> entry : map.entrySet()) {
            if (entry.getValue() instanceof IntRunsSet runs) {
                // a set this assignor answered with: read by runs, no boxed partition
                for (int r = 0; r < runs.runs(); r++) {
                    partitions = room(partitions, used + runs.count(r));
                    for (int p = runs.first(r); p < runs.first(r) + runs.count(r); p++) {
                        partitions[used++] = p;
                    }
                }
            } else {
                for (Integer p : entry.getValue()) {
                    partitions = room(partitions, used + 1);
                    partitions[used++] = p;
                }
            }
            if (k == topics.length) {
                topics = Arrays.copyOf(topics, 2 * k);
                ends = Arrays.copyOf(ends, 2 * k);
            }
            topics[k] = entry.getKey();
            ends[k++] = used;
        }
        return k == topics.length ? new Held(map, topics, ends, partitions)
            : new Held(map, Arrays.copyOf(topics, k), Arrays.copyOf(ends, k), partitions);
    }

    /** {@code values}, grown to hold at least {@code needed}. */
    private static int[] room(int[] values, int needed) {
        return needed <= values.length ? values : Arrays.copyOf(values, Math.max(needed, 2 * values.length));
    }
}
