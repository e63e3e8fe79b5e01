// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executor;
import java.util.function.DoubleSupplier;
import java.util.function.IntSupplier;

import org.apache.catalina.Container;
import org.apache.catalina.ContainerEvent;
import org.apache.catalina.ContainerListener;
import org.apache.catalina.Context;
import org.apache.catalina.Engine;
import org.apache.catalina.Host;
import org.apache.catalina.Lifecycle;
import org.apache.catalina.LifecycleEvent;
import org.apache.catalina.LifecycleListener;
import org.apache.catalina.Server;
import org.apache.catalina.Service;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;

/**
 * mod_proxy_beacon's sender inside Tomcat: one Server-level Listener in
 * server.xml announces this Tomcat to the proxies with the contexts it
 * serves, as they start and stop, and drains then leaves when Tomcat
 * stops (docs/tomcat.md). The attributes mirror the module's directives;
 * Settings checks them, Announcer sends.
 */
public final class BeaconListener implements LifecycleListener, ContainerListener {
    private static final Log log = LogFactory.getLog(BeaconListener.class);
    /** How long a context's stop waits after its withdrawal is sent: the proxies apply it first. */
    static final long CONTEXT_STOP_GRACE_MILLIS = 1000;

    /** The exception of a failed configuration: the one clear line (BCN00310) is logged before it. */
    private static final String NOT_CONFIGURED = "BeaconListener: configuration error, logged above";

    private final Settings.Raw raw = new Settings.Raw();
    private Settings settings;
    private Connector connector;
    private Engine engine;
    private Announcer announcer;
    private volatile boolean serverStopping;
    private InetSocketAddress urlVia;
    private String urlViaUrl;

    // ---- server.xml attributes -------------------------------------------------

    public void setProxies(String v) {
        raw.proxies = v;
    }

    public void setSecret(String v) {
        raw.secret = v;
    }

    public void setService(String v) {
        raw.service = v;
    }

    public void setInterval(String v) {
        raw.interval = v;
    }

    public void setAdvertise(String v) {
        raw.advertise = v;
    }

    public void setConnectorPort(String v) {
        raw.connectorPort = v;
    }

    public void setExcludedContexts(String v) {
        raw.excludedContexts = v;
    }

    public void setLbfactor(String v) {
        raw.lbfactor = v;
    }

    public void setDrainTimeout(String v) {
        raw.drainTimeout = v;
    }

    // ---- Tomcat's events -------------------------------------------------------

    @Override
    public void lifecycleEvent(LifecycleEvent event) {
        Lifecycle source = event.getLifecycle();
        String type = event.getType();
        if (source instanceof Server server) {
            if (settings == null && Lifecycle.BEFORE_START_EVENT.equals(type)) {
                // Tomcat starts a Server whose init failed: stop it before a connector opens
                throw new IllegalStateException(NOT_CONFIGURED);
            }
            if (settings == null && !Lifecycle.BEFORE_INIT_EVENT.equals(type)) {
                return;
            }
            switch (type) {
                case Lifecycle.BEFORE_INIT_EVENT -> configure(server);
                case Lifecycle.BEFORE_START_EVENT -> watch(engine);
                case Lifecycle.AFTER_START_EVENT -> begin();
                case Lifecycle.BEFORE_STOP_EVENT -> leave();
                default -> { }
            }
        } else if (source instanceof Context context && announcer != null && !serverStopping) {
            if (Lifecycle.AFTER_START_EVENT.equals(type)) {
                announceContexts(null, "context " + pathOf(context) + " started");
            } else if (Lifecycle.BEFORE_STOP_EVENT.equals(type)) {
                withdraw(context);
            }
        }
    }

    @Override
    public void containerEvent(ContainerEvent event) {
        if (!(event.getData() instanceof Container child)) {
            return;
        }
        if (Container.ADD_CHILD_EVENT.equals(event.getType())) {
            watch(child);
            if (child instanceof Context context && announcer != null && !serverStopping) {
                announceContexts(null, "context " + pathOf(context) + " started");
            }
        } else if (Container.REMOVE_CHILD_EVENT.equals(event.getType())) {
            child.removeLifecycleListener(this);
            child.removeContainerListener(this);
            if (announcer != null && !serverStopping) {
                announceContexts(null, "context " + child.getName() + " removed");
            }
        }
    }

    // ---- the steps ---------------------------------------------------------------

    /** Checks every attribute and finds the connector and Engine; a problem fails Tomcat's start. */
    private void configure(Server server) {
        try {
            settings = new Settings(raw, server.getCatalinaBase().toPath());
            Service service = serviceOf(server);
            engine = service.getContainer();
            String route = engine.getJvmRoute();
            if (route != null && !Wire.isName(route)) {
                throw Settings.bad("jvmRoute", route, "the Engine's jvmRoute is announced as route=, "
                                   + "1 to 63 of A-Z a-z 0-9 . _ -");
            }
        } catch (IllegalArgumentException e) {
            String line = "BCN00310: BeaconListener " + e.getMessage();
            log.error(line);
            throw new IllegalStateException(NOT_CONFIGURED);
        }
        if (Secret.readableByOthers(raw.secret, server.getCatalinaBase().toPath())) {
            log.warn("BCN00311: BeaconListener secret=\"" + raw.secret
                     + "\": the file can be read by its group or every user; make it 0600");
        }
    }

    /** The Service of the connector to advertise: connectorPort's, or the first HTTP one's. */
    private Service serviceOf(Server server) {
        for (Service service : server.findServices()) {
            for (Connector c : service.findConnectors()) {
                boolean http = c.getProtocolHandler() instanceof AbstractHttp11Protocol;
                if (settings.connectorPort == null ? http : c.getPort() == settings.connectorPort) {
                    connector = c;
                    return service;
                }
            }
        }
        if (settings.connectorPort != null) {
            throw Settings.bad("connectorPort", settings.connectorPort.toString(), "no Connector has this port");
        }
        throw new IllegalArgumentException("found no HTTP Connector to advertise; name one with connectorPort");
    }

    /** Listens to a container and, below it, every Host and Context. */
    private void watch(Container c) {
        if (c instanceof Context) {
            c.addLifecycleListener(this);
            return;
        }
        c.addContainerListener(this);
        for (Container child : c.findChildren()) {
            watch(child);
        }
    }

    /** The connectors are open: the first announcement, then every interval. */
    private void begin() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName().replaceAll("[^\\x21-\\x7e]", "");
        } catch (java.io.IOException e) {
            host = null;
        }
        try {
            announcer = new Announcer(settings, engine.getJvmRoute(), host == null || host.isEmpty() ? null : host,
                                      this::urlVia);
        } catch (java.io.IOException e) {
            log.error("BCN00314: BeaconListener cannot open a UDP socket: " + e.getMessage()
                      + "; this Tomcat is not announced");
            return;
        }
        announcer.start(startedContexts(null), utilization());
        String route = engine.getJvmRoute();
        log.info("BCN00300: announcing " + (announcer.url() == null ? "this Tomcat (no proxy address yet)" : announcer.url())
                 + " (" + (route == null ? "no route: the Engine has no jvmRoute" : "route " + route)
                 + (settings.service == null ? "" : ", service " + settings.service) + ", contexts "
                 + (announcer.contexts().isEmpty() ? "none" : String.join(",", announcer.contexts())) + ") to "
                 + settings.proxies + " every " + settings.intervalNanos / 1_000_000 + " ms");
    }

    /** Tomcat stops: drain, leave, and only then let it close its connectors. */
    private void leave() {
        serverStopping = true;
        if (announcer == null) {
            return;
        }
        try {
            announcer.drainThenLeave(busyThreads());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            announcer.close();
        }
    }

    /** A context stops while Tomcat runs: announced without it, and its stop held a moment. */
    private void withdraw(Context context) {
        if (announceContexts(context, "context " + pathOf(context) + " stopping: withdrawn")) {
            try {
                Thread.sleep(CONTEXT_STOP_GRACE_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Announces the started contexts (without leaving) if they changed; says why at info. */
    private boolean announceContexts(Context leaving, String why) {
        boolean changed = announcer.setContexts(startedContexts(leaving));
        if (changed) {
            log.info((leaving == null ? "BCN00301: " : "BCN00302: ") + why + "; announcing "
                     + (announcer.contexts().isEmpty() ? "no context" : String.join(",", announcer.contexts())));
        }
        return changed;
    }

    /** The paths of the started contexts of every Host, without leaving and the excluded ones. */
    private Set<String> startedContexts(Context leaving) {
        Set<String> paths = new TreeSet<>();
        for (Container h : engine.findChildren()) {
            for (Container c : h.findChildren()) {
                if (c instanceof Context context && context != leaving && c.getState().isAvailable()) {
                    paths.add(pathOf(context));
                }
            }
        }
        paths.removeAll(settings.excludedContexts);
        paths.removeIf(this::cannotAnnounce);
        if (paths.size() > Wire.CONTEXTS_MAX) {
            Set<String> left = new TreeSet<>(paths);
            while (paths.size() > Wire.CONTEXTS_MAX) {
                paths.remove(((TreeSet<String>) paths).last());
            }
            left.removeAll(paths);
            log.error("BCN00309: more than " + Wire.CONTEXTS_MAX + " contexts; not announced: " + left
                      + " (leave some out with excludedContexts)");
        }
        return paths;
    }

    private boolean cannotAnnounce(String path) {
        String why = Wire.contextProblem(path);
        if (why != null) {
            log.error("BCN00316: context " + path + " is not announced: its path " + why);
        }
        return why != null;
    }

    private static String pathOf(Context c) {
        return c.getPath().isEmpty() ? "/" : c.getPath();
    }

    // ---- the connector -----------------------------------------------------------

    /**
     * The advertised url: the attribute, or the connector's scheme, address
     * and port, where an address of every interface becomes the one the
     * route to the first proxy address leaves from; in canonical form (Url).
     */
    private synchronized String urlVia(InetSocketAddress proxy) {
        if (settings.advertise != null) {
            return settings.advertise;
        }
        if (proxy.equals(urlVia) && urlViaUrl != null) {
            return urlViaUrl;
        }
        InetAddress address = ((AbstractProtocol<?>) connector.getProtocolHandler()).getAddress();
        if (address == null || address.isAnyLocalAddress()) {
            try (DatagramSocket probe = new DatagramSocket()) {
                probe.connect(proxy);
                address = probe.getLocalAddress();
            } catch (SocketException e) {
                address = InetAddress.getLoopbackAddress();
            }
        }
        String host = address.getHostAddress().replaceAll("%.*$", "");
        int port = connector.getLocalPort() > 0 ? connector.getLocalPort() : connector.getPort();
        urlVia = proxy;
        urlViaUrl = Url.of(connector.getScheme(), host, port); // canonical: member keys are derived for it
        return urlViaUrl;
    }

    /** The connector's busy threads and its maximum, or null when its executor cannot tell. */
    private int[] threads() {
        ProtocolHandler handler = connector.getProtocolHandler();
        Executor e = handler.getExecutor();
        if (e instanceof org.apache.tomcat.util.threads.ThreadPoolExecutor t) {
            return new int[] {t.getActiveCount(), t.getMaximumPoolSize()};
        }
        if (e instanceof java.util.concurrent.ThreadPoolExecutor t) {
            return new int[] {t.getActiveCount(), t.getMaximumPoolSize()};
        }
        if (e instanceof org.apache.catalina.core.StandardThreadExecutor t) {
            return new int[] {t.getActiveCount(), t.getMaxThreads()};
        }
        return null;
    }

    private IntSupplier busyThreads() {
        return threads() == null ? null : () -> threads()[0];
    }

    private DoubleSupplier utilization() {
        if (!Settings.AUTO.equals(settings.lbfactor)) {
            return null;
        }
        if (threads() == null) {
            log.error("BCN00315: BeaconListener lbfactor=\"auto\": the connector's executor ("
                      + connector.getProtocolHandler().getExecutor() + ") does not count busy threads;"
                      + " announcing no lbfactor");
            return null;
        }
        return () -> {
            int[] t = threads();
            return t[1] > 0 ? (double) t[0] / t[1] : 1.0;
        };
    }
}
