package rdmaflux.metrics.autoconfigure;

import java.net.InetAddress;
import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.ServerOptions;

/**
 * The {@code rdmaflux.*} configuration properties of a Spring Boot application: the options of its
 * connections ({@code rdmaflux.connection.*}, onto {@link ConnectionOptions}), of its servers
 * ({@code rdmaflux.server.*}, onto {@link ServerOptions}), its loops ({@code rdmaflux.loops.*}), the RSocket
 * server over RDMA ({@code rdmaflux.rsocket.server.*}) and the device meters ({@code rdmaflux.metrics.*}).
 *
 * <p>A connection property left unset keeps the value of the options it is applied to, so the defaults
 * are {@link ConnectionOptions#defaults()}'s (and, for RSocket, the transport's own defaults).
 */
@ConfigurationProperties("rdmaflux")
public class RdmafluxProperties {
    @NestedConfigurationProperty
    private final ConnectionProperties connection = new ConnectionProperties();
    private final Server server = new Server();
    private final Loops loops = new Loops();
    private final Rsocket rsocket = new Rsocket();
    private final Metrics metrics = new Metrics();

    /** Creates the properties, every one unset or at its default. */
    public RdmafluxProperties() {
    }

    /** {@return the options of every connection: {@code rdmaflux.connection.*}} */
    public ConnectionProperties getConnection() {
        return connection;
    }

    /** {@return the options of listening servers: {@code rdmaflux.server.*}} */
    public Server getServer() {
        return server;
    }

    /** {@return the loops: {@code rdmaflux.loops.*}} */
    public Loops getLoops() {
        return loops;
    }

    /** {@return RSocket over RDMA: {@code rdmaflux.rsocket.*}} */
    public Rsocket getRsocket() {
        return rsocket;
    }

    /** {@return the meters: {@code rdmaflux.metrics.*}} */
    public Metrics getMetrics() {
        return metrics;
    }

    /** {@code rdmaflux.server.*}: onto {@link ServerOptions}. */
    public static class Server {
        /**
         * Most connect requests a server holds at once (also the listen backlog), 1..65535 (128 by default): the
         * ServerOptions bean's, for the servers the application binds itself (the RSocket server over RDMA keeps
         * the transport's default).
         */
        private int acceptQueue = ServerOptions.DEFAULT_ACCEPT_QUEUE;

        /** Creates the defaults. */
        public Server() {
        }

        /** {@return the accept queue} */
        public int getAcceptQueue() {
            return acceptQueue;
        }

        /**
         * Sets the accept queue.
         *
         * @param acceptQueue the accept queue
         */
        public void setAcceptQueue(int acceptQueue) {
            this.acceptQueue = acceptQueue;
        }
    }

    /** {@code rdmaflux.loops.*}: the {@link RdmaLoops} the application's connections run on. */
    public static class Loops {
        /** Thread name prefix of the loops: threads PREFIX-cm, PREFIX-completion-N, PREFIX-signal-N. */
        private String threadPrefix = "rdmaflux-app";

        /** Completion loops (threads draining completion queues), 1..64; the processors, at most 4, when unset. */
        private Integer completionLoops;

        /** How long closing the application context waits for the loops' threads to end. */
        private Duration shutdownTimeout = Duration.ofSeconds(10);

        /** Creates the defaults. */
        public Loops() {
        }

        /** {@return the thread name prefix} */
        public String getThreadPrefix() {
            return threadPrefix;
        }

        /**
         * Sets the thread name prefix.
         *
         * @param threadPrefix the thread name prefix
         */
        public void setThreadPrefix(String threadPrefix) {
            this.threadPrefix = threadPrefix;
        }

        /** {@return the completion loops, or null for {@link RdmaLoops#DEFAULT_COMPLETION_LOOPS}} */
        public Integer getCompletionLoops() {
            return completionLoops;
        }

        /**
         * Sets the completion loops.
         *
         * @param completionLoops the completion loops
         */
        public void setCompletionLoops(Integer completionLoops) {
            this.completionLoops = completionLoops;
        }

        /** {@return how long closing waits for the loops} */
        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        /**
         * Sets how long closing waits for the loops.
         *
         * @param shutdownTimeout how long closing waits for the loops
         */
        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }
    }

    /** {@code rdmaflux.rsocket.*}. */
    public static class Rsocket {
        private final RsocketServer server = new RsocketServer();

        /** Creates the defaults. */
        public Rsocket() {
        }

        /** {@return the RSocket server over RDMA} */
        public RsocketServer getServer() {
            return server;
        }
    }

    /**
     * {@code rdmaflux.rsocket.server.*}: serves the application's {@code @MessageMapping} handlers over RDMA
     * once {@code port} is set.
     */
    public static class RsocketServer {
        /** IP address of an RDMA interface to listen on; every RDMA interface when unset. */
        private InetAddress address;

        /** Port to listen on (0 picks a free one); the RSocket server over RDMA starts only when it is set. */
        private Integer port;

        /** How long starting and stopping the server may take. */
        private Duration timeout = Duration.ofSeconds(30);

        /** Creates the defaults. */
        public RsocketServer() {
        }

        /** {@return the address, or null for every RDMA interface} */
        public InetAddress getAddress() {
            return address;
        }

        /**
         * Sets the address.
         *
         * @param address the address
         */
        public void setAddress(InetAddress address) {
            this.address = address;
        }

        /** {@return the port, or null when the server is off} */
        public Integer getPort() {
            return port;
        }

        /**
         * Sets the port.
         *
         * @param port the port
         */
        public void setPort(Integer port) {
            this.port = port;
        }

        /** {@return how long starting and stopping may take} */
        public Duration getTimeout() {
            return timeout;
        }

        /**
         * Sets how long starting and stopping may take.
         *
         * @param timeout how long starting and stopping may take
         */
        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /** {@code rdmaflux.metrics.*}. */
    public static class Metrics {
        /** Whether to bind the device meters (devices, port state and MTU, hardware counters, resources). */
        private boolean devices = true;

        /**
         * Whether connects and accepts are Micrometer Observations (rdmaflux.connect, rdmaflux.accept) when the
         * application has an ObservationRegistry bean.
         */
        private boolean observations = true;

        /** Creates the defaults. */
        public Metrics() {
        }

        /** {@return whether the device meters are bound} */
        public boolean isDevices() {
            return devices;
        }

        /**
         * Sets whether to bind the device meters.
         *
         * @param devices whether to bind the device meters
         */
        public void setDevices(boolean devices) {
            this.devices = devices;
        }

        /** {@return whether connects and accepts are observed} */
        public boolean isObservations() {
            return observations;
        }

        /**
         * Sets whether connects and accepts are observed.
         *
         * @param observations whether connects and accepts are observed
         */
        public void setObservations(boolean observations) {
            this.observations = observations;
        }
    }
}
