package rdmaflux.metrics.autoconfigure;

import java.time.Duration;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.Step;

/** {@code rdmaflux.connection.timeouts.*}: the timeouts of the connection's setup and teardown steps ({@link Step}). */
public class ConnectionTimeouts {
    /** Timeout of the ADDRESS step (2s by default). */
    private Duration address;

    /** Timeout of the ROUTE step (2s by default). */
    private Duration route;

    /** Timeout of the CONNECT step (10s by default). */
    private Duration connect;

    /** Timeout of the ACCEPT step (10s by default). */
    private Duration accept;

    /** Timeout of the DISCONNECT step (3s by default). */
    private Duration disconnect;

    /** Creates the timeouts, every one unset. */
    public ConnectionTimeouts() {
    }

    /** {@return the timeout of {@link Step#ADDRESS}, or null when unset} */
    public Duration getAddress() {
        return address;
    }

    /**
     * Sets {@code rdmaflux.connection.timeouts.address}.
     *
     * @param address the timeout, or null to keep the options' own
     */
    public void setAddress(Duration address) {
        this.address = address;
    }

    /** {@return the timeout of {@link Step#ROUTE}, or null when unset} */
    public Duration getRoute() {
        return route;
    }

    /**
     * Sets {@code rdmaflux.connection.timeouts.route}.
     *
     * @param route the timeout, or null to keep the options' own
     */
    public void setRoute(Duration route) {
        this.route = route;
    }

    /** {@return the timeout of {@link Step#CONNECT}, or null when unset} */
    public Duration getConnect() {
        return connect;
    }

    /**
     * Sets {@code rdmaflux.connection.timeouts.connect}.
     *
     * @param connect the timeout, or null to keep the options' own
     */
    public void setConnect(Duration connect) {
        this.connect = connect;
    }

    /** {@return the timeout of {@link Step#ACCEPT}, or null when unset} */
    public Duration getAccept() {
        return accept;
    }

    /**
     * Sets {@code rdmaflux.connection.timeouts.accept}.
     *
     * @param accept the timeout, or null to keep the options' own
     */
    public void setAccept(Duration accept) {
        this.accept = accept;
    }

    /** {@return the timeout of {@link Step#DISCONNECT}, or null when unset} */
    public Duration getDisconnect() {
        return disconnect;
    }

    /**
     * Sets {@code rdmaflux.connection.timeouts.disconnect}.
     *
     * @param disconnect the timeout, or null to keep the options' own
     */
    public void setDisconnect(Duration disconnect) {
        this.disconnect = disconnect;
    }

    /**
     * Applies the timeouts that are set to a builder.
     *
     * @param b the builder
     */
    void applyTo(ConnectionOptions.Builder b) {
        if (address != null) {
            b.timeout(Step.ADDRESS, address);
        }
        if (route != null) {
            b.timeout(Step.ROUTE, route);
        }
        if (connect != null) {
            b.timeout(Step.CONNECT, connect);
        }
        if (accept != null) {
            b.timeout(Step.ACCEPT, accept);
        }
        if (disconnect != null) {
            b.timeout(Step.DISCONNECT, disconnect);
        }
    }
}
