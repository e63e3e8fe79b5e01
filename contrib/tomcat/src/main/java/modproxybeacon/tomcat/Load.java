// Licensed under the Apache License, Version 2.0; see LICENSE.
package modproxybeacon.tomcat;

/**
 * lbfactor="auto": the connector's utilization (busy threads over
 * maxThreads), averaged and mapped to a load factor exactly as the module's
 * ProxyBeaconLBFactor auto does (libbeacon's beacon_load_average_add and
 * beacon_lbfactor_from_utilization; docs/how-it-works.md#reporting-load),
 * so that a Tomcat and an httpd of the same fleet report on one scale.
 * Both are checked against tests/vectors/load.txt.
 */
final class Load {
    /** The average's time constant: a sample moves it dt/(SMOOTHING + dt) of the way. */
    static final double SMOOTHING_SECONDS = 5.0;
    static final int FACTOR_MAX = 10000;   // hundredths: 100.00, idle
    static final int FACTOR_FLOOR = 1000;  // 10.00, saturated

    private double utilization;
    private long atNanos;
    private boolean started;

    /** Adds a sample u (0 to 1) taken at atNanos (System.nanoTime); returns the average. */
    synchronized double add(double u, long nanos) {
        u = clamped(u);
        if (!started) {
            utilization = u;
            started = true;
        } else if (nanos > atNanos) {
            double dt = (nanos - atNanos) / 1e9;
            utilization += dt / (SMOOTHING_SECONDS + dt) * (u - utilization);
        }
        atNanos = nanos;
        return utilization;
    }

    synchronized double average() {
        return utilization;
    }

    /** The factor of a utilization, in hundredths: 100 - 90u, rounded to the nearest. */
    static int factorOf(double u) {
        return (int) (FACTOR_MAX - (FACTOR_MAX - FACTOR_FLOOR) * clamped(u) + 0.5);
    }

    /** 0 to 1; NaN and anything above 1 count as saturated. */
    private static double clamped(double u) {
        if (!(u <= 1.0)) {
            return 1.0;
        }
        return u < 0.0 ? 0.0 : u;
    }
}
