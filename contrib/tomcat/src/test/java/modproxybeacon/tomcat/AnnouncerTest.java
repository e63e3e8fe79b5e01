// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.Test;

/**
 * The Announcer on loopback: what it sends when, each datagram signed (its
 * mac re-computed here over its bytes), timestamps strictly increasing.
 */
public class AnnouncerTest {
    private static final Pattern MAC = Pattern.compile("(.*) mac=([0-9a-f]{16})");
    private static final Pattern TS = Pattern.compile(" ts=([0-9]+)");

    @Test
    public void everyChangeIsAnnouncedAtOnceAndLeavingIsRepeated() throws Exception {
        try (DatagramSocket proxy = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            proxy.setSoTimeout(5000);
            Settings.Raw raw = new Settings.Raw();
            raw.proxies = "127.0.0.1:" + proxy.getLocalPort();
            raw.secret = "hex:00112233445566778899aabbccddeeff";
            raw.service = "shop";
            raw.interval = "1h"; // no periodic announcement within the test
            raw.lbfactor = "2.5";
            raw.drainTimeout = "2";
            Settings s = new Settings(raw, Path.of("/"));
            Announcer a = new Announcer(s, "t1", "web-1", via -> "http://127.0.0.1:8080");
            a.start(Set.of("/app"), null);
            a.setContexts(List.of("/app")); // no change: nothing sent
            a.setContexts(List.of("/app", "/hot"));
            AtomicInteger busy = new AtomicInteger(1);
            Thread drain = new Thread(() -> {
                try {
                    a.drainThenLeave(busy::get);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            drain.start();
            List<String> got = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                got.add(receive(proxy, s.key));
            }
            busy.set(0); // the last request done: leaving follows
            for (int i = 0; i < 4; i++) {
                got.add(receive(proxy, s.key));
            }
            drain.join(5000);
            a.close();

            String fields = "BEACON url=http://127.0.0.1:8080 host=web-1 pid=" + ProcessHandle.current().pid();
            String[] tails = {"svc=shop ctx=/app route=t1 lbfactor=2.5",
                              "svc=shop ctx=/app,/hot route=t1 lbfactor=2.5",
                              "svc=shop ctx=/app,/hot route=t1 lbfactor=2.5 state=draining"};
            for (int i = 0; i < got.size(); i++) {
                String tail = i < 3 ? tails[i] : "svc=shop ctx=/app,/hot route=t1 lbfactor=2.5 state=leaving";
                String d = got.get(i);
                assertTrue(d, d.startsWith(fields + " seq=" + (i + 1) + " ts="));
                assertTrue(d, d.endsWith(" " + tail));
            }
            long last = 0;
            for (String d : got) {
                Matcher m = TS.matcher(d);
                assertTrue(m.find());
                long ts = Long.parseLong(m.group(1));
                assertTrue("ts " + ts + " after " + last, ts > last);
                last = ts;
            }
        }
    }

    /** One datagram, its mac checked; returned without the mac. */
    private static String receive(DatagramSocket proxy, byte[] key) throws Exception {
        DatagramPacket p = new DatagramPacket(new byte[4096], 4096);
        proxy.receive(p);
        String d = new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII);
        Matcher m = MAC.matcher(d);
        assertTrue(d, m.matches());
        assertEquals(d, SipHash.hex(SipHash.hash(key, m.group(1).getBytes(StandardCharsets.US_ASCII))), m.group(2));
        return m.group(1);
    }
}
