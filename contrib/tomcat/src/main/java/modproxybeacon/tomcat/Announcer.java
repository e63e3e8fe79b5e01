// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.Function;

import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;

/**
 * Sends one member's announcements to every address of the proxies: at
 * once on every change, and every interval. Knows nothing of Tomcat: the
 * Listener tells it what changed. Timestamps strictly increase, so the
 * proxies' replay check never drops a change made within one microsecond
 * of the last.
 */
final class Announcer {
    /** Milliseconds after the first state=leaving at which it is sent again (the module's). */
    static final int[] LEAVING_REPEATS_MS = {200, 500, 900};
    /** A name that fails keeps its last addresses for this many lookups (the module's rule). */
    static final int LOOKUPS_KEPT = 3;
    static final long SEND_WARNING_NANOS = TimeUnit.SECONDS.toNanos(60);
    static final long SAMPLE_MILLIS = 100;

    private final Settings settings;
    private static final Log log = LogFactory.getLog(BeaconListener.class);
    private final Function<InetSocketAddress, String> urlVia;
    private final Wire.Fields fields = new Wire.Fields();
    private final DatagramSocket socket;
    private final ScheduledExecutorService ticks = daemon("beacon-announce");
    private final ScheduledExecutorService lookups = daemon("beacon-resolve");
    private final Map<Settings.Proxy, Name> names = new LinkedHashMap<>();
    private final Map<InetSocketAddress, Long> warnedAt = new HashMap<>();
    private final Load load = new Load();
    private DoubleSupplier utilization;
    private boolean sampleFailed;

    /** One proxy name's addresses and how many lookups in a row failed. */
    private static final class Name {
        List<InetSocketAddress> addresses = List.of();
        int failures;
    }

    /**
     * urlVia gives the advertised url, given the first proxy address (the
     * route to it picks the local address of a connector on every address).
     */
    Announcer(Settings settings, String route, String host,
              Function<InetSocketAddress, String> urlVia) throws IOException {
        this.settings = settings;
        this.urlVia = urlVia;
        this.socket = new DatagramSocket();
        fields.host = host;
        fields.pid = ProcessHandle.current().pid();
        fields.svc = settings.service;
        fields.route = route;
        if (settings.lbfactor != null && !settings.lbfactor.equals(Settings.AUTO)) {
            fields.lbfactor = settings.lbfactor;
        }
        for (Settings.Proxy p : settings.proxies) {
            names.put(p, new Name());
        }
    }

    /**
     * Looks the proxies up, announces, and from then on every interval.
     * utilization (0 to 1) is sampled ten times a second when lbfactor is
     * auto; null: no lbfactor=.
     */
    void start(Collection<String> contexts, DoubleSupplier utilization) {
        this.utilization = utilization;
        if (utilization != null) {
            sample();
            fields.lbfactor = Wire.factorText(Load.factorOf(load.average()));
        }
        resolve();
        setContexts(contexts);
        long interval = settings.intervalNanos;
        ticks.scheduleAtFixedRate(this::tick, interval, interval, TimeUnit.NANOSECONDS);
        lookups.scheduleWithFixedDelay(this::resolve, interval, interval, TimeUnit.NANOSECONDS);
        if (utilization != null) {
            ticks.scheduleAtFixedRate(this::sample, SAMPLE_MILLIS, SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    /** The contexts this member serves now; announced at once when they changed. */
    synchronized boolean setContexts(Collection<String> contexts) {
        List<String> now = List.copyOf(contexts);
        if (now.equals(fields.contexts)) {
            return false;
        }
        fields.contexts = now;
        send();
        return true;
    }

    synchronized List<String> contexts() {
        return fields.contexts;
    }

    /** The url of the last announcement, or null before one was sent. */
    synchronized String url() {
        return fields.url;
    }

    /**
     * Tomcat is stopping: state=draining until busy reads 0 (or the
     * drainTimeout), then state=leaving and its repeats; nothing is sent
     * after. busy null: no way to count, leave at once.
     */
    void drainThenLeave(java.util.function.IntSupplier busy) throws InterruptedException {
        ticks.shutdownNow();
        lookups.shutdownNow();
        long deadline = System.nanoTime() + settings.drainTimeoutNanos;
        if (busy != null && settings.drainTimeoutNanos > 0) {
            announceState("draining");
            log.info("BCN00303: Tomcat stopping: draining, " + busy.getAsInt() + " busy thread(s); leaving at 0 or after "
                     + TimeUnit.NANOSECONDS.toMillis(settings.drainTimeoutNanos) + " ms");
            while (busy.getAsInt() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        }
        long first = System.nanoTime();
        announceState("leaving");
        for (int ms : LEAVING_REPEATS_MS) {
            long wait = first + TimeUnit.MILLISECONDS.toNanos(ms) - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            announceState("leaving");
        }
        log.info("BCN00304: left: state=leaving sent " + (1 + LEAVING_REPEATS_MS.length) + " times to "
                 + addresses().size() + " address(es)");
    }

    void close() {
        ticks.shutdownNow();
        lookups.shutdownNow();
        socket.close();
    }

    private synchronized void announceState(String state) {
        fields.state = state;
        send();
    }

    private void tick() {
        try {
            synchronized (this) {
                if (utilization != null) {
                    fields.lbfactor = Wire.factorText(Load.factorOf(load.average()));
                }
                send();
            }
        } catch (RuntimeException e) {
            log.warn("BCN00312: announcing failed: " + e);
        }
    }

    private void sample() {
        try {
            load.add(utilization.getAsDouble(), System.nanoTime());
        } catch (RuntimeException e) {
            if (!sampleFailed) {
                sampleFailed = true;
                log.warn("BCN00313: cannot read the connector's busy threads (said once): " + e);
            }
        }
    }

    /** Signs the current fields with a new ts and seq and sends them to every address. */
    private synchronized void send() {
        List<InetSocketAddress> to = addresses();
        if (to.isEmpty()) {
            return;
        }
        fields.url = urlVia.apply(to.get(0));
        Instant now = Instant.now();
        fields.ts = Math.max(now.getEpochSecond() * 1_000_000L + now.getNano() / 1000, fields.ts + 1);
        fields.seq++;
        byte[] datagram = Wire.datagram(fields, settings.key);
        for (InetSocketAddress a : to) {
            try {
                socket.send(new DatagramPacket(datagram, datagram.length, a));
            } catch (IOException e) {
                long t = System.nanoTime();
                Long last = warnedAt.get(a);
                if (last == null || t - last > SEND_WARNING_NANOS) {
                    warnedAt.put(a, t);
                    log.warn("BCN00305: cannot send to " + a + ": " + e.getMessage() + " (said at most once a minute)");
                }
            }
        }
    }

    /** Every address of every name, each once, in the order of proxies. */
    private List<InetSocketAddress> addresses() {
        Set<InetSocketAddress> all = new LinkedHashSet<>();
        synchronized (names) {
            for (Name n : names.values()) {
                all.addAll(n.addresses);
            }
        }
        return new ArrayList<>(all);
    }

    /** Looks every name up; a name that fails keeps its addresses for LOOKUPS_KEPT lookups. */
    private void resolve() {
        for (Settings.Proxy p : settings.proxies) {
            List<InetSocketAddress> found = new ArrayList<>();
            try {
                for (InetAddress a : InetAddress.getAllByName(p.host())) {
                    found.add(new InetSocketAddress(a, p.port()));
                }
            } catch (UnknownHostException e) {
                found = null;
            }
            synchronized (names) {
                Name n = names.get(p);
                if (found != null) {
                    if (!found.equals(n.addresses)) {
                        log.info("BCN00306: " + p + " resolves to " + found.size() + " address(es): " + found);
                    }
                    n.addresses = found;
                    n.failures = 0;
                } else if (++n.failures == 1) {
                    log.warn("BCN00307: cannot resolve " + p + (n.addresses.isEmpty() ? "; announcing to it once it does"
                             : "; keeping its last addresses for " + LOOKUPS_KEPT + " lookups"));
                } else if (n.failures == LOOKUPS_KEPT + 1 && !n.addresses.isEmpty()) {
                    n.addresses = List.of();
                    log.warn("BCN00308: cannot resolve " + p + " still; not announcing to it until it resolves");
                }
            }
        }
    }

    private static ScheduledExecutorService daemon(String name) {
        ClassLoader loader = Announcer.class.getClassLoader();
        return Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            t.setContextClassLoader(loader);
            return t;
        });
    }
}
