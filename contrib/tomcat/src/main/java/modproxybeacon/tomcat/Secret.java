// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Set;

/**
 * The secret and the 16-byte key it gives, by the wire format's rules
 * ("The secret and the key", "Secret files"): the same rules as
 * ProxyBeaconSecret and beaconctl, checked against tests/vectors/secrets.txt
 * and secret-files.txt. No message names the secret's bytes.
 */
final class Secret {
    static final int KEY_BYTES = 16;
    static final int FILE_LINE_MAX = 4096;
    private static final String HEX = "hex:";

    private Secret() {
    }

    /**
     * The key of an attribute value: {@code file:PATH} (relative to base),
     * {@code hex:} and 32 hex digits, or a passphrase of at least 16 bytes.
     */
    static byte[] load(String value, Path base) {
        if (value.startsWith("file:")) {
            Path path = base.resolve(value.substring(5));
            byte[] content;
            try {
                content = Files.readAllBytes(path);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read " + path + ": " + e.getMessage());
            }
            try {
                return ofFile(content);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(path + ": " + e.getMessage());
            }
        }
        if (value.startsWith("exec:")) {
            throw new IllegalArgumentException("exec: is not supported here; use file:");
        }
        return of(value.getBytes(StandardCharsets.UTF_8));
    }

    /** Whether group or others may read the file of a file: value (the module warns too). */
    static boolean readableByOthers(String value, Path base) {
        if (!value.startsWith("file:")) {
            return false;
        }
        try {
            Set<PosixFilePermission> p = Files.getPosixFilePermissions(base.resolve(value.substring(5)));
            return p.contains(PosixFilePermission.GROUP_READ) || p.contains(PosixFilePermission.OTHERS_READ);
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /** The key of a secret file's whole content: its first line is the secret. */
    static byte[] ofFile(byte[] content) {
        int end = 0;
        while (end < content.length && content[end] != '\n') {
            end++;
        }
        if (end > 0 && content[end - 1] == '\r') {
            end--;
        }
        if (end > FILE_LINE_MAX) {
            throw new IllegalArgumentException("its first line is longer than " + FILE_LINE_MAX + " bytes");
        }
        for (int i = 0; i < end; i++) {
            if (content[i] == 0 || content[i] == '\r') {
                throw new IllegalArgumentException("its first line holds a NUL or a CR");
            }
        }
        return of(Arrays.copyOf(content, end));
    }

    /** The key of a secret's bytes. */
    static byte[] of(byte[] secret) {
        byte[] prefix = HEX.getBytes(StandardCharsets.US_ASCII);
        if (secret.length >= prefix.length
                && Arrays.equals(Arrays.copyOf(secret, prefix.length), prefix)) {
            return ofHex(Arrays.copyOfRange(secret, prefix.length, secret.length));
        }
        if (secret.length == 0) {
            throw new IllegalArgumentException("the secret is empty");
        }
        if (secret.length < KEY_BYTES) {
            throw new IllegalArgumentException("a passphrase must be at least " + KEY_BYTES + " bytes");
        }
        try {
            return Arrays.copyOf(MessageDigest.getInstance("SHA-1").digest(secret), KEY_BYTES);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-1", e);
        }
    }

    private static byte[] ofHex(byte[] digits) {
        if (digits.length != 2 * KEY_BYTES) {
            throw new IllegalArgumentException("a hex: secret must have exactly 32 hex digits");
        }
        byte[] key = new byte[KEY_BYTES];
        for (int i = 0; i < KEY_BYTES; i++) {
            int hi = Character.digit(digits[2 * i], 16), lo = Character.digit(digits[2 * i + 1], 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("a hex: secret must have exactly 32 hex digits");
            }
            key[i] = (byte) (hi << 4 | lo);
        }
        return key;
    }
}
