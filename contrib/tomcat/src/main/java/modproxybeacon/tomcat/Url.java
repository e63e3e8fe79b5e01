// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.util.Map;

/**
 * A member's identity, its canonical url: the Java side's one home for
 * libbeacon's beacon_url_canonicalize (include/beacon_url.h), which the
 * shared rows of tests/vectors/urls.txt pin. Scheme and host lower-cased,
 * the scheme's default port dropped, one trailing '/' ignored, an IPv6
 * literal in RFC 5952 form, leading zeros of a port dropped. A receiver
 * with member keys drops a datagram whose url= is not in this form.
 */
final class Url {
    /** httpd's default ports of the schemes it proxies to a member; 0: none (uwsgi). */
    private static final Map<String, Integer> DEFAULT_PORT = Map.of(
            "http", 80, "https", 443, "ws", 80, "wss", 443, "h2", 443, "h2c", 80,
            "ajp", 8009, "fcgi", 8000, "scgi", 4000, "uwsgi", 0);
    private static final int MAX_SCHEME = 15;
    private static final int MAX_HOST = 253;

    private Url() {
    }

    /** The canonical form of url; an IllegalArgumentException saying what is wrong when refused. */
    static String canonical(String url) {
        for (int i = 0; i < url.length(); i++) {
            char c = url.charAt(i);
            if (c <= 0x20 || c >= 0x7f) {
                throw new IllegalArgumentException("the url holds a space or a non-printable byte");
            }
        }
        int p = 0;
        int n = url.length();
        if (n == 0 || !alpha(url.charAt(0))) {
            throw new IllegalArgumentException("the url must start with a scheme (http://...)");
        }
        while (p < n && (alpha(url.charAt(p)) || digit(url.charAt(p)) || "+-.".indexOf(url.charAt(p)) >= 0)) {
            p++;
        }
        if (p > MAX_SCHEME) {
            throw new IllegalArgumentException("the scheme is longer than 15 bytes");
        }
        String scheme = lower(url.substring(0, p));
        if (scheme.equals("unix")) {
            throw new IllegalArgumentException("the unix: socket form is not allowed");
        }
        if (!url.startsWith("://", p)) {
            throw new IllegalArgumentException("the url must have the form scheme://host[:port]");
        }
        Integer defaultPort = DEFAULT_PORT.get(scheme);
        if (defaultPort == null) {
            throw new IllegalArgumentException("the scheme is not one httpd proxies to a member (http, https, ws, wss,"
                                               + " h2, h2c, ajp, fcgi, scgi, uwsgi)");
        }
        p += 3;
        String host;
        if (p < n && url.charAt(p) == '[') {
            int close = url.indexOf(']', p);
            if (close < 0) {
                throw new IllegalArgumentException("an IPv6 literal lacks its closing ]");
            }
            host = "[" + ipv6(url.substring(p + 1, close)) + "]";
            p = close + 1;
        } else {
            int start = p;
            while (p < n && ":/?#".indexOf(url.charAt(p)) < 0) {
                char c = url.charAt(p);
                if (!(alpha(c) || digit(c) || "-._~".indexOf(c) >= 0)) {
                    throw new IllegalArgumentException(c == '@' ? "userinfo (user@) is not allowed"
                                                                : "the host holds a character that is not allowed");
                }
                p++;
            }
            if (p == start) {
                throw new IllegalArgumentException("the host is missing");
            }
            if (p - start > MAX_HOST) {
                throw new IllegalArgumentException("the host is longer than 253 bytes");
            }
            host = lower(url.substring(start, p));
        }
        int port = 0;
        if (p < n && url.charAt(p) == ':') {
            int start = ++p;
            long v = 0;
            while (p < n && digit(url.charAt(p))) {
                v = v * 10 + (url.charAt(p++) - '0');
                if (v > 65535) {
                    throw new IllegalArgumentException("the port is above 65535");
                }
            }
            if (p == start || (p < n && "/?#".indexOf(url.charAt(p)) < 0)) {
                throw new IllegalArgumentException("the port is not a decimal number");
            }
            if (v == 0) {
                throw new IllegalArgumentException("the port is 0");
            }
            port = (int) v;
        }
        if (p < n && url.charAt(p) == '/' && p + 1 == n) {
            p++;
        }
        if (p < n) {
            char c = url.charAt(p);
            throw new IllegalArgumentException(c == '?' || url.indexOf('?', p) >= 0 ? "a query is not allowed"
                                               : c == '#' || url.indexOf('#', p) >= 0 ? "a fragment is not allowed"
                                               : c == '/' ? "a path is not allowed (only the origin, scheme://host[:port])"
                                               : "the url must have the form scheme://host[:port]");
        }
        if (port == 0 && defaultPort == 0) {
            throw new IllegalArgumentException("a uwsgi url needs a port (httpd knows no default port for uwsgi)");
        }
        return scheme + "://" + host + (port == 0 || port == defaultPort ? "" : ":" + port);
    }

    /** The url of a connector: scheme, address (any IPv6 form, without brackets) and port, canonical. */
    static String of(String scheme, String address, int port) {
        return canonical(scheme + "://" + (address.contains(":") ? "[" + address + "]" : address) + ":" + port);
    }

    /** An IPv6 literal (without brackets) in RFC 5952 form, as glibc's inet_ntop writes it. */
    static String ipv6(String literal) {
        int[] w = parse6(literal);
        if (w == null) {
            throw new IllegalArgumentException("an IPv6 literal is malformed");
        }
        int best = -1;
        int bestLen = 0;
        for (int i = 0; i < 8;) {
            if (w[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && w[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                best = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) {
            best = -1;
        }
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == best) {
                s.append(i == 0 ? "::" : ":");
                i += bestLen - 1;
                continue;
            }
            if (best == 0 && i == 6 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff))) {
                s.append((w[6] >> 8) + "." + (w[6] & 0xff) + "." + (w[7] >> 8) + "." + (w[7] & 0xff));
                break;
            }
            s.append(Integer.toHexString(w[i]));
            if (i < 7) {
                s.append(':');
            }
        }
        return s.toString();
    }

    /** inet_pton(AF_INET6): eight 16-bit groups, or null. */
    private static int[] parse6(String t) {
        int[] w = new int[8];
        int gap = -1;
        int count = 0;
        int n = t.length();
        int p = 0;
        if (t.startsWith("::")) {
            gap = 0;
            p = 2;
            if (n == 2) {
                return w;
            }
        } else if (t.startsWith(":")) {
            return null;
        }
        while (p < n) {
            int start = p;
            while (p < n && Character.digit(t.charAt(p), 16) >= 0) {
                p++;
            }
            if (p < n && t.charAt(p) == '.') {
                int[] v4 = parse4(t.substring(start));
                if (v4 == null || count > 6) {
                    return null;
                }
                w[count++] = v4[0] << 8 | v4[1];
                w[count++] = v4[2] << 8 | v4[3];
                p = n;
                break;
            }
            if (p == start || p - start > 4 || count == 8) {
                return null;
            }
            w[count++] = Integer.parseInt(t.substring(start, p), 16);
            if (p == n) {
                break;
            }
            if (t.charAt(p) != ':') {
                return null;
            }
            p++;
            if (p < n && t.charAt(p) == ':') {
                if (gap >= 0) {
                    return null;
                }
                gap = count;
                p++;
                if (p == n) {
                    break;
                }
            } else if (p == n) {
                return null;
            }
        }
        if (gap >= 0) {
            if (count == 8) {
                return null;
            }
            int[] out = new int[8];
            System.arraycopy(w, 0, out, 0, gap);
            System.arraycopy(w, gap, out, 8 - (count - gap), count - gap);
            return out;
        }
        return count == 8 ? w : null;
    }

    private static int[] parse4(String t) {
        String[] parts = t.split("\\.", -1);
        if (parts.length != 4) {
            return null;
        }
        int[] out = new int[4];
        for (int i = 0; i < 4; i++) {
            if (!parts[i].matches("[0-9]{1,3}") || (parts[i].length() > 1 && parts[i].charAt(0) == '0')) {
                return null;
            }
            out[i] = Integer.parseInt(parts[i]);
            if (out[i] > 255) {
                return null;
            }
        }
        return out;
    }

    private static boolean alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean digit(char c) {
        return c >= '0' && c <= '9';
    }

    private static String lower(String s) {
        return s.toLowerCase(java.util.Locale.ROOT);
    }
}
