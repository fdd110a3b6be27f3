package io.stickyd.kafka;

import java.util.AbstractSet;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * An immutable set of partition numbers held as sorted, disjoint runs (first, count): what a member of
 * a compact answer gets, without a boxed Integer per partition until someone iterates it.
 */
final class IntRunsSet extends AbstractSet<Integer> {
    private final int[] firsts;
    private final int[] counts;
    private final int size;

    /** {@code firsts}/{@code counts}: runs sorted by first partition, not overlapping. */
    IntRunsSet(int[] firsts, int[] counts) {
        this.firsts = firsts;
        this.counts = counts;
        long total = 0;
        for (int count : counts) {
            total += count;
        }
        this.size = (int) total;
    }

    /** How many runs the set holds. */
    int runs() {
        return firsts.length;
    }

    /** The first partition of run {@code r}. */
    int first(int r) {
        return firsts[r];
    }

    /** The partitions in run {@code r}. */
    int count(int r) {
        return counts[r];
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
        int hi = firsts.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (firsts[mid] > p) {
                hi = mid - 1;
            } else if (p - firsts[mid] >= counts[mid]) {
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
                return run < firsts.length;
            }

            @Override
            public Integer next() {
                if (run >= firsts.length) {
                    throw new NoSuchElementException();
                }
                int value = firsts[run] + offset;
                if (++offset == counts[run]) {
                    run++;
                    offset = 0;
                }
                return value;
            }
        };
    }
}
