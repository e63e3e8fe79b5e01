// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The beacon wire format as a sender writes it (docs/wire-format.md): one
 * line "BEACON key=value ... mac=TAG", the fields in the order url, host,
 * pid, seq, ts, svc, ctx, route, lbfactor, state, the tag SipHash-2-4 of
 * everything before " mac=". The value rules a receiver enforces are
 * checked here, so that a bad attribute fails Tomcat's start instead of
 * every datagram being dropped at the proxy.
 */
final class Wire {
    static final int DATAGRAM_MAX = 2048;
    static final int CONTEXTS_MAX = 16;
    static final int CONTEXT_PATH_MAX = 80;

    /** svc= and route=: 1 to 63 letters, digits, '.', '_', '-'. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,63}");
    /** A ctx= path: "/" or "/seg[/seg...]", a segment of [A-Za-z0-9._~-] that is not "." or "..". */
    private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._~-]+");
    /** lbfactor=: 1 to 100, at most two decimals. */
    private static final Pattern FACTOR = Pattern.compile("([0-9]{1,3})(\\.[0-9]{1,2})?");
    /** A printable value without spaces. */
    private static final Pattern VALUE = Pattern.compile("[\\x21-\\x7e]+");

    private Wire() {
    }

    static boolean isName(String s) {
        return s != null && NAME.matcher(s).matches();
    }

    /** Why a context path cannot be announced, or null when it can. */
    static String contextProblem(String path) {
        if (path.equals("/")) {
            return null;
        }
        if (path.length() > CONTEXT_PATH_MAX) {
            return "longer than " + CONTEXT_PATH_MAX + " bytes";
        }
        if (!path.startsWith("/")) {
            return "does not start with /";
        }
        for (String seg : path.substring(1).split("/", -1)) {
            if (!SEGMENT.matcher(seg).matches() || seg.equals(".") || seg.equals("..")) {
                return "has a segment '" + seg + "' outside A-Z a-z 0-9 . _ ~ - (or . or ..)";
            }
        }
        return null;
    }

    /** Whether s is a load factor as lbfactor= carries it. */
    static boolean isFactor(String s) {
        var m = FACTOR.matcher(s);
        if (!m.matches()) {
            return false;
        }
        double f = Double.parseDouble(s);
        return f >= 1 && f <= 100;
    }

    /** Hundredths as lbfactor= writes them: "100", "2.5", "10.25". */
    static String factorText(int hundredths) {
        int whole = hundredths / 100, cents = hundredths % 100;
        if (cents == 0) {
            return Integer.toString(whole);
        }
        return cents % 10 == 0 ? whole + "." + cents / 10 : String.format("%d.%02d", whole, cents);
    }

    /** One announcement's fields; null ones are left out. */
    static final class Fields {
        String url, host, svc, route, lbfactor, state;
        long pid, seq, ts;
        List<String> contexts;
    }

    /** The signed datagram of f under key. */
    static byte[] datagram(Fields f, byte[] key) {
        StringBuilder s = new StringBuilder("BEACON");
        add(s, "url", f.url);
        add(s, "host", f.host);
        add(s, "pid", Long.toString(f.pid));
        add(s, "seq", Long.toString(f.seq));
        add(s, "ts", Long.toString(f.ts));
        add(s, "svc", f.svc);
        add(s, "ctx", f.contexts == null || f.contexts.isEmpty() ? null : String.join(",", f.contexts));
        add(s, "route", f.route);
        add(s, "lbfactor", f.lbfactor);
        add(s, "state", f.state);
        return sign(s.toString(), key);
    }

    /** line and its " mac=TAG". */
    static byte[] sign(String line, byte[] key) {
        byte[] body = line.getBytes(StandardCharsets.US_ASCII);
        String signed = line + " mac=" + SipHash.hex(SipHash.hash(key, body));
        if (signed.length() > DATAGRAM_MAX) {
            throw new IllegalArgumentException("datagram of " + signed.length() + " bytes, more than "
                                               + DATAGRAM_MAX);
        }
        return signed.getBytes(StandardCharsets.US_ASCII);
    }

    private static void add(StringBuilder s, String key, String value) {
        if (value == null) {
            return;
        }
        if (!VALUE.matcher(value).matches()) {
            throw new IllegalArgumentException(key + "= must be printable ASCII without spaces");
        }
        s.append(' ').append(key).append('=').append(value);
    }
}
