// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import org.junit.Test;

/** The Listener's url is canonical as libbeacon's (tests/vectors/urls.txt, every row). */
public class UrlTest {
    @Test
    public void everyUrlRowIsCanonicalOrRefused() throws Exception {
        for (byte[][] row : Vectors.rows("urls.txt", 100, "url", "canonical", "name")) {
            String url = Vectors.text(row[0]);
            String expected = Vectors.text(row[1]);
            String name = Vectors.text(row[2]);
            if (expected.equals("refused")) {
                assertThrows(name, IllegalArgumentException.class, () -> Url.canonical(url));
            } else {
                assertEquals(name, expected, Url.canonical(url));
                assertEquals(name + " (its canonical form is its own)", expected, Url.canonical(expected));
            }
        }
    }

    /** What InetAddress.getHostAddress() writes for a connector becomes RFC 5952. */
    @Test
    public void aConnectorsAddressIsCanonical() {
        assertEquals("http://[::1]:8080", Url.of("http", "0:0:0:0:0:0:0:1", 8080));
        assertEquals("https://[2001:db8::1]", Url.of("https", "2001:db8:0:0:0:0:0:1", 443));
        assertEquals("http://127.0.0.1", Url.of("http", "127.0.0.1", 80));
        assertEquals("ajp://10.0.0.5", Url.of("ajp", "10.0.0.5", 8009));
        assertEquals("http://[::ffff:10.0.0.5]:8080", Url.of("http", "0:0:0:0:0:ffff:a00:5", 8080));
    }
}
