// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Listener's attributes, checked all at once when Tomcat initializes:
 * each problem is an IllegalArgumentException whose message names the
 * attribute and its value (never the secret's), which the Listener logs
 * as one line and fails Tomcat's start with. The rules are the module's
 * directives' (docs/directives.md), which the names mirror.
 */
final class Settings {
    static final int PROXY_NAMES_MAX = 16;
    static final long DAY_NANOS = TimeUnit.DAYS.toNanos(1);
    static final String AUTO = "auto";

    /** httpd's time syntax (ap_timeout_parameter_parse): a number, seconds unless ms, s, mi or h follows. */
    private static final Pattern TIME = Pattern.compile("([0-9]{1,9})(ms|s|mi|h)?");
    private static final Pattern PROXY = Pattern.compile("(?:[a-z][a-z0-9+.-]*://)?(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+):([0-9]{1,5})");
    private static final Pattern URL = Pattern.compile(
            "[A-Za-z][A-Za-z0-9+.-]*://(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?/?");

    /** One name of proxies: looked up again every interval. */
    record Proxy(String host, int port) {
        @Override
        public String toString() {
            return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    final List<Proxy> proxies;
    final byte[] key;
    final String service;
    final long intervalNanos;
    final String advertise;
    final Integer connectorPort;
    final Set<String> excludedContexts;
    final String lbfactor;
    final long drainTimeoutNanos;

    /** The raw attribute values as server.xml set them; null: not set. */
    static final class Raw {
        String proxies, secret, service, interval, advertise, connectorPort, excludedContexts, lbfactor,
               drainTimeout;
    }

    Settings(Raw raw, Path catalinaBase) {
        proxies = proxies(required("proxies", raw.proxies));
        String secret = required("secret", raw.secret);
        try {
            key = Secret.load(secret, catalinaBase);
        } catch (IllegalArgumentException e) {
            // the value is named only when it is a file's: a secret never
            throw new IllegalArgumentException("secret" + (secret.startsWith("file:") ? "=\"" + secret + "\"" : "")
                                               + ": " + e.getMessage());
        }
        if (raw.service != null && !Wire.isName(raw.service)) {
            throw bad("service", raw.service, "expects 1 to 63 of A-Z a-z 0-9 . _ -");
        }
        service = raw.service;
        intervalNanos = time("interval", raw.interval, 5, false);
        drainTimeoutNanos = time("drainTimeout", raw.drainTimeout, 10, true);
        if (raw.advertise != null && !URL.matcher(raw.advertise).matches()) {
            throw bad("advertise", raw.advertise, "expects scheme://host[:port], no path");
        }
        try {
            // announced in canonical form: a receiver with member keys drops any other
            advertise = raw.advertise == null ? null : Url.canonical(raw.advertise);
        } catch (IllegalArgumentException e) {
            throw bad("advertise", raw.advertise, e.getMessage());
        }
        connectorPort = raw.connectorPort == null ? null : port("connectorPort", raw.connectorPort);
        excludedContexts = contexts(raw.excludedContexts);
        if (raw.lbfactor != null && !raw.lbfactor.equals(AUTO) && !Wire.isFactor(raw.lbfactor)) {
            throw bad("lbfactor", raw.lbfactor, "expects 1 to 100 with at most two decimals, or auto");
        }
        lbfactor = raw.lbfactor;
    }

    static IllegalArgumentException bad(String attribute, String value, String why) {
        return new IllegalArgumentException(attribute + "=\"" + value + "\": " + why);
    }

    private static String required(String attribute, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("attribute " + attribute + " is required");
        }
        return value;
    }

    private static List<String> words(String value) {
        List<String> out = new ArrayList<>();
        for (String w : value.trim().split("[\\s,]+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }

    private static List<Proxy> proxies(String value) {
        List<Proxy> out = new ArrayList<>();
        for (String w : words(value)) {
            Matcher m = PROXY.matcher(w);
            if (!m.matches()) {
                throw bad("proxies", value, "'" + w + "' is not host:port");
            }
            String host = m.group(1).startsWith("[") ? m.group(1).substring(1, m.group(1).length() - 1)
                                                     : m.group(1);
            int port = Integer.parseInt(m.group(2));
            if (port < 1 || port > 65535) {
                throw bad("proxies", value, "'" + w + "': a port is 1 to 65535");
            }
            Proxy p = new Proxy(host, port);
            if (!out.contains(p)) {
                out.add(p);
            }
        }
        if (out.size() > PROXY_NAMES_MAX) {
            throw bad("proxies", value, "names more than " + PROXY_NAMES_MAX + " proxies");
        }
        return Collections.unmodifiableList(out);
    }

    private static int port(String attribute, String value) {
        int p = value.matches("[0-9]{1,5}") ? Integer.parseInt(value) : 0;
        if (p < 1 || p > 65535) {
            throw bad(attribute, value, "a port is 1 to 65535");
        }
        return p;
    }

    /** A time in nanoseconds; more than 0 (0 too when zeroAllowed), at most a day. */
    static long time(String attribute, String value, long defaultSeconds, boolean zeroAllowed) {
        if (value == null) {
            return TimeUnit.SECONDS.toNanos(defaultSeconds);
        }
        Matcher m = TIME.matcher(value.trim());
        if (!m.matches()) {
            throw bad(attribute, value, "not a time (5, 5s, 500ms, 2mi, 1h)");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        long nanos = switch (unit) {
            case "ms" -> TimeUnit.MILLISECONDS.toNanos(n);
            case "mi" -> TimeUnit.MINUTES.toNanos(n);
            case "h" -> TimeUnit.HOURS.toNanos(n);
            default -> TimeUnit.SECONDS.toNanos(n);
        };
        if (nanos > DAY_NANOS) {
            throw bad(attribute, value, "more than a day, the most it may be");
        }
        if (nanos == 0 && !zeroAllowed) {
            throw bad(attribute, value, "must be more than 0");
        }
        return nanos;
    }

    private static Set<String> contexts(String value) {
        Set<String> out = new TreeSet<>();
        if (value == null) {
            return out;
        }
        for (String w : words(value)) {
            String why = Wire.contextProblem(w);
            if (why != null) {
                throw bad("excludedContexts", value, "'" + w + "' is not a context path (/, /app): it " + why);
            }
            out.add(w);
        }
        return Collections.unmodifiableSet(out);
    }
}
