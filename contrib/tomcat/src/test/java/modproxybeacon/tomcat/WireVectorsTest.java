// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/** The Listener's SipHash, secrets, datagrams and load factor against tests/vectors. */
public class WireVectorsTest {
    @Test
    public void sipHashGivesThePapersTags() throws Exception {
        for (byte[][] row : Vectors.rows("siphash24.txt", 64, "key", "message", "tag")) {
            long tag = SipHash.hash(Vectors.hex(Vectors.text(row[0])), Vectors.hex(Vectors.text(row[1])));
            assertEquals("message " + Vectors.text(row[1]), Vectors.text(row[2]), SipHash.hex(tag));
        }
    }

    @Test
    public void everySecretGivesItsKeyOrIsRefused() throws Exception {
        for (byte[][] row : Vectors.rows("secrets.txt", 20, "secret", "key", "name")) {
            check(Vectors.text(row[2]), Vectors.text(row[1]), () -> Secret.of(row[0]));
        }
    }

    @Test
    public void everySecretFileGivesItsKeyOrIsRefused() throws Exception {
        for (byte[][] row : Vectors.rows("secret-files.txt", 10, "file", "key", "name")) {
            check(Vectors.text(row[2]), Vectors.text(row[1]), () -> Secret.ofFile(row[0]));
        }
    }

    /** Each announcement vector, rebuilt from its fields, is the same datagram byte for byte. */
    @Test
    public void everyAnnouncementIsWrittenAndSignedAsTheVector() throws Exception {
        for (byte[][] row : Vectors.rows("announcements.txt", 10, "version", "secret", "datagram")) {
            String datagram = Vectors.text(row[2]);
            Map<String, String> f = new LinkedHashMap<>();
            for (String token : datagram.split(" ")) {
                if (token.contains("=")) {
                    f.put(token.substring(0, token.indexOf('=')), token.substring(token.indexOf('=') + 1));
                }
            }
            Wire.Fields w = new Wire.Fields();
            w.url = f.get("url");
            w.host = f.get("host");
            w.pid = Long.parseLong(f.get("pid"));
            w.seq = Long.parseLong(f.get("seq"));
            w.ts = Long.parseLong(f.get("ts"));
            w.svc = f.get("svc");
            w.contexts = f.containsKey("ctx") ? Arrays.asList(f.get("ctx").split(",")) : null;
            w.route = f.get("route");
            w.lbfactor = f.get("lbfactor");
            w.state = f.get("state");
            byte[] key = Secret.of(row[1]);
            assertEquals(datagram, new String(Wire.datagram(w, key), StandardCharsets.US_ASCII));
        }
    }

    /** lbfactor="auto" averages and maps as the module does (tests/vectors/load.txt). */
    @Test
    public void theSharedLoadVectorsHold() throws Exception {
        for (byte[][] row : Vectors.rows("load.txt", 10, "samples", "lbfactor", "name")) {
            Load load = new Load();
            double u = 0;
            for (String sample : Vectors.text(row[0]).split(";")) {
                String[] s = sample.split("@");
                u = load.add(Double.parseDouble(s[0].replace("nan", "NaN")), Long.parseLong(s[1]) * 1_000_000L);
            }
            assertEquals(Vectors.text(row[2]), Vectors.text(row[1]), Wire.factorText(Load.factorOf(u)));
        }
    }

    @Test
    public void factorsAreWrittenAsTheWireWritesThem() {
        assertEquals("100", Wire.factorText(10000));
        assertEquals("2.5", Wire.factorText(250));
        assertEquals("10.05", Wire.factorText(1005));
        assertEquals("10.25", Wire.factorText(1025));
        assertEquals("1", Wire.factorText(100));
    }

    @Test
    public void contextPathsFollowTheCtxRule() {
        for (String ok : List.of("/", "/app", "/a/b", "/A.b_c~d-e", "/" + "x".repeat(79))) {
            assertEquals(ok, null, Wire.contextProblem(ok));
        }
        for (String bad : List.of("", "app", "/app/", "//", "/a//b", "/.", "/..", "/a/../b", "/a b", "/a%20",
                                  "/a;b", "/a,b", "/" + "x".repeat(80))) {
            assertTrue(bad, Wire.contextProblem(bad) != null);
        }
    }

    @Test
    public void aDatagramOverTheLimitIsRefusedNotCut() {
        Wire.Fields w = new Wire.Fields();
        w.host = "h".repeat(Wire.DATAGRAM_MAX);
        assertThrows(IllegalArgumentException.class, () -> Wire.datagram(w, new byte[16]));
        w.host = "a b";
        assertThrows(IllegalArgumentException.class, () -> Wire.datagram(w, new byte[16]));
    }

    private interface KeyOf {
        byte[] get();
    }

    private static void check(String name, String expected, KeyOf keyOf) {
        if (expected.equals("refused")) {
            assertThrows(name, IllegalArgumentException.class, keyOf::get);
        } else {
            assertArrayEquals(name, Vectors.hex(expected), keyOf.get());
        }
    }
}
