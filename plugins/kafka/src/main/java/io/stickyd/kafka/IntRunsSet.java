package io.stickyd.kafka;

import java.util.AbstractSet;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * An immutable set of partition numbers held as sorted, disjoint runs (first, count): what a member of
 * a compact answer gets, without a boxed Integer per partition until someone iterates it. A set of one
 * run (a single partition, or a range) is one object; more runs share one array of (first, count) pairs.
 */
final class IntRunsSet extends AbstractSet<Integer> {
    /** the runs as (first, count) pairs; null when the set is the one run {@code (first, count)}. */
    private final int[] pairs;
    private final int first;
    private final int count;
    private final int size;

    /** {@code firsts}/{@code counts}: runs sorted by first partition, not overlapping. */
    IntRunsSet(int[] firsts, int[] counts) {
        this(firsts, counts, 0, firsts.length);
    }

    /** The runs {@code from..to-1} of {@code firsts}/{@code counts} (sorted by first partition, not overlapping). */
    IntRunsSet(int[] firsts, int[] counts, int from, int to) {
        long total = 0;
        for (int r = from; r < to; r++) {
            total += counts[r];
        }
        size = (int) total;
        if (to - from == 1) {
            pairs = null;
            first = firsts[from];
            count = counts[from];
            return;
        }
        pairs = new int[2 * (to - from)];
        for (int r = from; r < to; r++) {
            pairs[2 * (r - from)] = firsts[r];
            pairs[2 * (r - from) + 1] = counts[r];
        }
        first = 0;
        count = 0;
    }

    /** How many runs the set holds. */
    int runs() {
        return pairs == null ? 1 : pairs.length / 2;
    }

    /** The first partition of run {@code r}. */
    int first(int r) {
        return pairs == null ? first : pairs[2 * r];
    }

    /** The partitions in run {@code r}. */
    int count(int r) {
        return pairs == null ? count : pairs[2 * r + 1];
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public boolean contains(Object o) {
        if (!(o instanceof Integer p)) {
            return false;
        }
        int lo = 0;
        int hi = runs() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (first(mid) > p) {
                hi = mid - 1;
            } else if (p - first(mid) >= count(mid)) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }

    @Override
    public Iterator<Integer> iterator() {
        return new Iterator<>() {
            private int run;
            private int offset;

            @Override
            public boolean hasNext() {
                return run < runs();
            }

            @Override
            public Integer next() {
                if (run >= runs()) {
                    throw new NoSuchElementException();
                }
                int value = first(run) + offset;
                if (++offset == count(run)) {
                    run++;
                    offset = 0;
                }
                return value;
            }
        };
    }
}
