// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A reader of tests/vectors/ (line format: tests/vectors/README.md), the
 * known answers every sender meets. The directory is the system property
 * beacon.vectors (ctest sets it). A damaged file, a wrong header or too
 * few rows fails the test: a test that read no row proves nothing.
 */
final class Vectors {
    private Vectors() {
    }

    /** Each row's fields as bytes, unescaped; the header must be cols. */
    static List<byte[][]> rows(String name, int minRows, String... cols) throws IOException {
        String dir = System.getProperty("beacon.vectors");
        if (dir == null) {
            throw new AssertionError("beacon.vectors is not set: run with ctest, or -Dbeacon.vectors=tests/vectors");
        }
        List<String> lines = Files.readAllLines(Path.of(dir, name), StandardCharsets.US_ASCII);
        List<byte[][]> rows = new ArrayList<>();
        boolean header = false;
        for (String line : lines) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\t", -1);
            if (!header) {
                if (!Arrays.equals(fields, cols)) {
                    throw new AssertionError(name + ": header " + Arrays.toString(fields) + ", expected "
                                             + Arrays.toString(cols));
                }
                header = true;
                continue;
            }
            if (fields.length != cols.length) {
                throw new AssertionError(name + ": a row of " + fields.length + " fields: " + line);
            }
            byte[][] row = new byte[cols.length][];
            for (int i = 0; i < cols.length; i++) {
                row[i] = unescape(fields[i]);
            }
            rows.add(row);
        }
        if (rows.size() < minRows) {
            throw new AssertionError(name + ": " + rows.size() + " rows, expected at least " + minRows);
        }
        return rows;
    }

    static String text(byte[] field) {
        return new String(field, StandardCharsets.ISO_8859_1);
    }

    static byte[] hex(String digits) {
        byte[] out = new byte[digits.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(digits.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder();
        for (byte b : bytes) {
            s.append(String.format("%02x", b & 0xff));
        }
        return s.toString();
    }

    private static byte[] unescape(String field) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c != '\\') {
                out.write(c);
                continue;
            }
            char e = field.charAt(++i);
            switch (e) {
                case '\\' -> out.write('\\');
                case 't' -> out.write('\t');
                case 'n' -> out.write('\n');
                case 'r' -> out.write('\r');
                case '0' -> out.write(0);
                case 'x' -> {
                    out.write(Integer.parseInt(field.substring(i + 1, i + 3), 16));
                    i += 2;
                }
                default -> throw new AssertionError("unknown escape \\" + e + " in " + field);
            }
        }
        return out.toByteArray();
    }
}
