package io.stickyd.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The few MessagePack forms the compact encoding uses (docs/wire-format.md, "The compact encoding"):
 * maps, arrays, strings, integers, doubles, nil and binary blobs, written into one growing byte array
 * and read back from one. Binary blobs carry little-endian int32 arrays.
 */
final class Msgpack {
    private Msgpack() {
    }

    /** Writes MessagePack values into a growing byte array. */
    static final class Writer {
        private byte[] buf;
        private int len;

        Writer() {
            this(1 << 12);
        }

        /** A writer whose first buffer holds {@code capacity} bytes. */
        Writer(int capacity) {
            buf = new byte[Math.max(16, capacity)];
        }

        Writer bytes(byte[] raw) {
            ensure(raw.length);
            System.arraycopy(raw, 0, buf, len, raw.length);
            len += raw.length;
            return this;
        }

        private void ensure(int more) {
            if (len + more > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + more));
            }
        }

        private void put(int b) {
            ensure(1);
            buf[len++] = (byte) b;
        }

        private void putBig(long value, int size) {
            ensure(size);
            for (int shift = 8 * (size - 1); shift >= 0; shift -= 8) {
                buf[len++] = (byte) (value >>> shift);
            }
        }

        Writer map(int n) {
            header(n, 0x80, 16, 0xde, 0xdf);
            return this;
        }

        Writer array(int n) {
            header(n, 0x90, 16, 0xdc, 0xdd);
            return this;
        }

        private void header(int n, int fix, int fixLimit, int code16, int code32) {
            if (n < fixLimit) {
                put(fix | n);
            } else if (n < 65536) {
                put(code16);
                putBig(n, 2);
            } else {
                put(code32);
                putBig(n, 4);
            }
        }

        Writer str(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            if (utf8.length < 32) {
                put(0xa0 | utf8.length);
            } else if (utf8.length < 256) {
                put(0xd9);
                put(utf8.length);
            } else {
                put(0xdb);
                putBig(utf8.length, 4);
            }
            return bytes(utf8);
        }

        Writer integer(long v) {
            if (v >= 0 && v < 128) {
                put((int) v);
            } else if (v >= -32 && v < 0) {
                put((int) v & 0xff);
            } else if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
                put(0xd2);
                putBig(v, 4);
            } else {
                put(0xd3);
                putBig(v, 8);
            }
            return this;
        }

        Writer decimal(double v) {
            put(0xcb);
            putBig(Double.doubleToLongBits(v), 8);
            return this;
        }

        Writer bool(boolean v) {
            put(v ? 0xc3 : 0xc2);
            return this;
        }

        Writer nil() {
            put(0xc0);
            return this;
        }

        /** A binary blob of {@code n} little-endian int32 values, from {@code values[0..n)}. */
        Writer int32s(int[] values, int n) {
            put(0xc6);
            putBig(4L * n, 4);
            ensure(4 * n);
            // one bulk copy (a plain copy where the machine is little-endian), not four stores per value
            java.nio.ByteBuffer.wrap(buf, len, 4 * n).order(java.nio.ByteOrder.LITTLE_ENDIAN).asIntBuffer().put(values, 0, n);
            len += 4 * n;
            return this;
        }

        byte[] toByteArray() {
            return Arrays.copyOf(buf, len);
        }

        /** The buffer written so far (valid up to {@link #length()}), not copied. */
        byte[] buffer() {
            return buf;
        }

        int length() {
            return len;
        }
    }

    /** Reads MessagePack values from a byte array; anything unexpected throws IllegalStateException. */
    static final class Reader {
        private final byte[] buf;
        private int at;

        Reader(byte[] buf, int from) {
            this.buf = buf;
            this.at = from;
        }

        private int u8() {
            if (at >= buf.length) {
                throw new IllegalStateException("compact answer truncated");
            }
            return buf[at++] & 0xff;
        }

        private long big(int size) {
            long v = 0;
            for (int i = 0; i < size; i++) {
                v = (v << 8) | u8();
            }
            return v;
        }

        int peek() {
            if (at >= buf.length) {
                throw new IllegalStateException("compact answer truncated");
            }
            return buf[at] & 0xff;
        }

        int map() {
            int b = u8();
            if ((b & 0xf0) == 0x80) {
                return b & 0x0f;
            }
            if (b == 0xde || b == 0xdf) {
                return (int) big(b == 0xde ? 2 : 4);
            }
            throw new IllegalStateException("compact answer: expected a map");
        }

        int array() {
            int b = u8();
            if ((b & 0xf0) == 0x90) {
                return b & 0x0f;
            }
            if (b == 0xdc || b == 0xdd) {
                return (int) big(b == 0xdc ? 2 : 4);
            }
            throw new IllegalStateException("compact answer: expected an array");
        }

        String str() {
            int b = u8();
            int n;
            if ((b & 0xe0) == 0xa0) {
                n = b & 0x1f;
            } else if (b >= 0xd9 && b <= 0xdb) {
                n = (int) big(1 << (b - 0xd9));
            } else {
                throw new IllegalStateException("compact answer: expected a string");
            }
            check(n);
            String s = new String(buf, at, n, StandardCharsets.UTF_8);
            at += n;
            return s;
        }

        long integer() {
            int b = u8();
            if (b < 0x80) {
                return b;
            }
            if (b >= 0xe0) {
                return (byte) b;
            }
            return switch (b) {
                case 0xcc -> big(1);
                case 0xcd -> big(2);
                case 0xce -> big(4);
                case 0xcf, 0xd3 -> big(8);
                case 0xd0 -> (byte) big(1);
                case 0xd1 -> (short) big(2);
                case 0xd2 -> (int) big(4);
                default -> throw new IllegalStateException("compact answer: expected an integer");
            };
        }

        boolean nil() {
            if (peek() == 0xc0) {
                at++;
                return true;
            }
            return false;
        }

        /** A binary blob of little-endian int32 values, read in place (no copy). */
        java.nio.IntBuffer int32View() {
            int b = u8();
            if (b < 0xc4 || b > 0xc6) {
                throw new IllegalStateException("compact answer: expected binary");
            }
            int n = (int) big(1 << (b - 0xc4));
            check(n);
            if (n % 4 != 0) {
                throw new IllegalStateException("compact answer: binary of " + n + " bytes is not int32s");
            }
            java.nio.IntBuffer view = java.nio.ByteBuffer.wrap(buf, at, n).slice()
                .order(java.nio.ByteOrder.LITTLE_ENDIAN).asIntBuffer();
            at += n;
            return view;
        }

        /** A binary blob of little-endian int32 values. */
        int[] int32s() {
            int b = u8();
            if (b < 0xc4 || b > 0xc6) {
                throw new IllegalStateException("compact answer: expected binary");
            }
            int n = (int) big(1 << (b - 0xc4));
            check(n);
            if (n % 4 != 0) {
                throw new IllegalStateException("compact answer: binary of " + n + " bytes is not int32s");
            }
            int[] out = new int[n / 4];
            for (int i = 0; i < out.length; i++, at += 4) {
                out[i] = (buf[at] & 0xff) | (buf[at + 1] & 0xff) << 8 | (buf[at + 2] & 0xff) << 16 | buf[at + 3] << 24;
            }
            return out;
        }

        private void check(int n) {
            if (n < 0 || at + n > buf.length) {
                throw new IllegalStateException("compact answer truncated");
            }
        }

        /** Skips one value of any form. */
        void skip() {
            int b = u8();
            if (b < 0x80 || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
                return;
            }
            if ((b & 0xf0) == 0x80 || (b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd || b == 0xde || b == 0xdf) {
                at--;
                boolean isMap = (b & 0xf0) == 0x80 || b == 0xde || b == 0xdf;
                int n = isMap ? map() : array();
                for (int i = 0; i < (isMap ? 2 * n : n); i++) {
                    skip();
                }
                return;
            }
            if ((b & 0xe0) == 0xa0) {
                jump(b & 0x1f);
                return;
            }
            switch (b) {
                case 0xcc, 0xd0 -> jump(1);
                case 0xcd, 0xd1 -> jump(2);
                case 0xca, 0xce, 0xd2 -> jump(4);
                case 0xcb, 0xcf, 0xd3 -> jump(8);
                case 0xc4, 0xd9 -> jump((int) big(1));
                case 0xc5, 0xda -> jump((int) big(2));
                case 0xc6, 0xdb -> jump((int) big(4));
                default -> throw new IllegalStateException("compact answer: unexpected byte " + b);
            }
        }

        private void jump(int n) {
            check(n);
            at += n;
        }
    }
}
