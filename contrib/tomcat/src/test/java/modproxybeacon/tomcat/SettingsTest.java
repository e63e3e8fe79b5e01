// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.Test;

/** The attributes: defaults, and one message naming the attribute for each mistake. */
public class SettingsTest {
    private static final String KEY = "hex:00112233445566778899aabbccddeeff";

    private static Settings.Raw minimal() {
        Settings.Raw r = new Settings.Raw();
        r.proxies = "127.0.0.1:5555";
        r.secret = KEY;
        return r;
    }

    private static Settings settings(Consumer<Settings.Raw> change) {
        Settings.Raw r = minimal();
        change.accept(r);
        return new Settings(r, Path.of("/nonexistent"));
    }

    private static String refused(Consumer<Settings.Raw> change) {
        return assertThrows(IllegalArgumentException.class, () -> settings(change)).getMessage();
    }

    @Test
    public void theDefaultsMirrorTheModule() {
        Settings s = settings(r -> { });
        assertEquals(TimeUnit.SECONDS.toNanos(5), s.intervalNanos);
        assertEquals(TimeUnit.SECONDS.toNanos(10), s.drainTimeoutNanos);
        assertNull(s.service);
        assertNull(s.advertise);
        assertNull(s.lbfactor);
        assertNull(s.connectorPort);
        assertTrue(s.excludedContexts.isEmpty());
        assertEquals(List.of(new Settings.Proxy("127.0.0.1", 5555)), s.proxies);
    }

    @Test
    public void timesTakeHttpdsSyntax() {
        assertEquals(TimeUnit.MILLISECONDS.toNanos(500), settings(r -> r.interval = "500ms").intervalNanos);
        assertEquals(TimeUnit.SECONDS.toNanos(7), settings(r -> r.interval = "7s").intervalNanos);
        assertEquals(TimeUnit.MINUTES.toNanos(2), settings(r -> r.interval = "2mi").intervalNanos);
        assertEquals(TimeUnit.HOURS.toNanos(1), settings(r -> r.interval = "1h").intervalNanos);
        assertEquals(0, settings(r -> r.drainTimeout = "0").drainTimeoutNanos);
        assertEquals("interval=\"abc\": not a time (5, 5s, 500ms, 2mi, 1h)", refused(r -> r.interval = "abc"));
        assertEquals("interval=\"0\": must be more than 0", refused(r -> r.interval = "0"));
        assertEquals("interval=\"25h\": more than a day, the most it may be", refused(r -> r.interval = "25h"));
        assertEquals("drainTimeout=\"-1\": not a time (5, 5s, 500ms, 2mi, 1h)", refused(r -> r.drainTimeout = "-1"));
    }

    @Test
    public void proxiesAreNamesWithPorts() {
        Settings s = settings(r -> r.proxies = "udp://p1.internal:5555, [::1]:6000 p1.internal:5555");
        assertEquals(List.of(new Settings.Proxy("p1.internal", 5555), new Settings.Proxy("::1", 6000)), s.proxies);
        assertEquals("[::1]:6000", s.proxies.get(1).toString());
        assertEquals("attribute proxies is required", refused(r -> r.proxies = null));
        assertEquals("proxies=\"p1\": 'p1' is not host:port", refused(r -> r.proxies = "p1"));
        assertEquals("proxies=\"p1:0\": 'p1:0': a port is 1 to 65535", refused(r -> r.proxies = "p1:0"));
        String many = "p0:1 p1:1 p2:1 p3:1 p4:1 p5:1 p6:1 p7:1 p8:1 p9:1 pa:1 pb:1 pc:1 pd:1 pe:1 pf:1 pg:1";
        assertTrue(refused(r -> r.proxies = many).endsWith("names more than 16 proxies"));
    }

    @Test
    public void aSecretProblemNeverShowsTheSecret() throws Exception {
        assertEquals("attribute secret is required", refused(r -> r.secret = null));
        String shortHex = "hex:0011223344";
        String m = refused(r -> r.secret = shortHex);
        assertEquals("secret: a hex: secret must have exactly 32 hex digits", m);
        String pass = "too-short-pass";
        m = refused(r -> r.secret = pass);
        assertFalse(m, m.contains(pass));
        assertTrue(refused(r -> r.secret = "exec:/bin/true").contains("exec: is not supported here; use file:"));
        Path dir = Files.createTempDirectory("beacon");
        Path file = dir.resolve("key");
        Files.writeString(file, KEY + "\n");
        Settings.Raw raw = minimal();
        raw.secret = "file:key";
        assertEquals(16, new Settings(raw, dir).key.length);
        raw.secret = "file:missing";
        m = assertThrows(IllegalArgumentException.class, () -> new Settings(raw, dir)).getMessage();
        assertTrue(m, m.startsWith("secret=\"file:missing\": cannot read " + dir.resolve("missing")));
        Files.delete(file);
        Files.delete(dir);
    }

    @Test
    public void namesFactorsUrlsAndContextsFollowTheModulesRules() {
        assertEquals("shop", settings(r -> r.service = "shop").service);
        assertTrue(refused(r -> r.service = "a b").startsWith("service=\"a b\": expects 1 to 63"));
        assertEquals("2.5", settings(r -> r.lbfactor = "2.5").lbfactor);
        assertEquals("auto", settings(r -> r.lbfactor = "auto").lbfactor);
        for (String bad : List.of("0", "101", "2.555", "automatic", "")) {
            assertTrue(bad, refused(r -> r.lbfactor = bad).startsWith("lbfactor=\"" + bad + "\": expects"));
        }
        assertEquals("http://10.0.0.5:8080", settings(r -> r.advertise = "http://10.0.0.5:8080/").advertise);
        assertEquals("https://[::1]", settings(r -> r.advertise = "https://[::1]").advertise);
        assertTrue(refused(r -> r.advertise = "http://h/app").endsWith("expects scheme://host[:port], no path"));
        // announced in canonical form (tests/vectors/urls.txt), what a member key is derived for
        assertEquals("https://app.example.com", settings(r -> r.advertise = "HTTPS://App.Example.COM:443/").advertise);
        assertEquals("http://[::1]:8080", settings(r -> r.advertise = "http://[0:0:0:0:0:0:0:1]:08080").advertise);
        assertTrue(refused(r -> r.advertise = "http://h:0").startsWith("advertise=\"http://h:0\": the port is 0"));
        assertTrue(refused(r -> r.advertise = "ftp://h").startsWith("advertise=\"ftp://h\": the scheme is not one"));
        assertTrue(refused(r -> r.advertise = "uwsgi://h").contains("needs a port"));
        assertEquals(Set.of("/", "/manager"), settings(r -> r.excludedContexts = " /manager, /").excludedContexts);
        assertTrue(refused(r -> r.excludedContexts = "manager").startsWith(
                "excludedContexts=\"manager\": 'manager' is not a context path"));
        assertEquals(Integer.valueOf(8080), settings(r -> r.connectorPort = "8080").connectorPort);
        assertEquals("connectorPort=\"x\": a port is 1 to 65535", refused(r -> r.connectorPort = "x"));
    }
}
