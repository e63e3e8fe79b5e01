// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

/**
 * SipHash-2-4 (Aumasson and Bernstein), the MAC of the beacon wire format:
 * 2 compression rounds, 4 finalization rounds, a 16-byte key. The JDK has
 * none. Checked against the paper's 64 vectors in tests/vectors/siphash24.txt.
 */
final class SipHash {
    private SipHash() {
    }

    /** The 64-bit tag of message under the 16-byte key. */
    static long hash(byte[] key, byte[] message) {
        if (key.length != 16) {
            throw new IllegalArgumentException("a SipHash key is 16 bytes");
        }
        long k0 = le64(key, 0), k1 = le64(key, 8);
        long[] v = {0x736f6d6570736575L ^ k0, 0x646f72616e646f6dL ^ k1,
                    0x6c7967656e657261L ^ k0, 0x7465646279746573L ^ k1};
        int whole = message.length - message.length % 8;
        for (int i = 0; i < whole; i += 8) {
            compress(v, le64(message, i));
        }
        // the last block: the remaining bytes, and the length's low byte on top
        long last = ((long) message.length) << 56;
        for (int i = whole; i < message.length; i++) {
            last |= (message[i] & 0xffL) << (8 * (i - whole));
        }
        compress(v, last);
        v[2] ^= 0xff;
        for (int i = 0; i < 4; i++) {
            round(v);
        }
        return v[0] ^ v[1] ^ v[2] ^ v[3];
    }

    /** The tag as the wire writes it: its 8 bytes little-endian, 16 lower-case hex digits. */
    static String hex(long tag) {
        StringBuilder s = new StringBuilder(16);
        for (int i = 0; i < 8; i++) {
            s.append(String.format("%02x", (tag >>> (8 * i)) & 0xff));
        }
        return s.toString();
    }

    private static void compress(long[] v, long block) {
        v[3] ^= block;
        round(v);
        round(v);
        v[0] ^= block;
    }

    private static void round(long[] v) {
        v[0] += v[1]; v[1] = Long.rotateLeft(v[1], 13); v[1] ^= v[0]; v[0] = Long.rotateLeft(v[0], 32);
        v[2] += v[3]; v[3] = Long.rotateLeft(v[3], 16); v[3] ^= v[2];
        v[0] += v[3]; v[3] = Long.rotateLeft(v[3], 21); v[3] ^= v[0];
        v[2] += v[1]; v[1] = Long.rotateLeft(v[1], 17); v[1] ^= v[2]; v[2] = Long.rotateLeft(v[2], 32);
    }

    private static long le64(byte[] b, int at) {
        long x = 0;
        for (int i = 7; i >= 0; i--) {
            x = (x << 8) | (b[at + i] & 0xffL);
        }
        return x;
    }
}
