package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.RdmaContext;

/**
 * Connection setup timed step by step like rdma-core's {@code cmtime}: every step is issued for all
 * connections before the next step starts (create ids, resolve addresses, resolve routes, create QPs,
 * connect, disconnect, destroy), and each step's total is the time from its first call to its last
 * event. The passive side runs in this process on its own thread and event channel, accepting with a
 * QP of its own, as cmtime's server does.
 */
final class ConnectionRate {
    /** cmtime's steps, in its order and with its names (its bind step is only timed with {@code -b}). */
    enum Step {
        CREATE_ID("create id"), RESOLVE_ADDR("resolve addr"), RESOLVE_ROUTE("resolve route"), CREATE_QP("create qp"),
        CONNECT("connect"), DISCONNECT("disconnect"), DESTROY("destroy");

        final String label;

        Step(String label) {
            this.label = label;
        }

        /** {@return whether the step is part of setting a connection up (what the setup rate divides by)} */
        boolean isSetup() {
            return ordinal() <= CONNECT.ordinal();
        }
    }

    /**
     * Per-step totals in milliseconds.
     *
     * @param connections how many connections were set up and torn down
     * @param totalMillis step → total time
     */
    record Result(int connections, Map<Step, Double> totalMillis) {
        /** {@return connections per second over the setup steps (create id through connect)} */
        double setupRate() {
            double ms = 0;
            for (Map.Entry<Step, Double> e : totalMillis.entrySet()) {
                if (e.getKey().isSetup()) {
                    ms += e.getValue();
                }
            }
            return connections / (ms / 1000);
        }
    }

    private ConnectionRate() {
    }

    /**
     * Runs the steps for {@code connections} connections against a server on {@code address}.
     *
     * @param address the RDMA interface's address and a free port
     * @param connections how many
     * @param timeout the longest wait for any one event
     * @return the step totals
     */
    static Result run(InetSocketAddress address, int connections, Duration timeout) throws InterruptedException {
        AtomicReference<Throwable> serverFailure = new AtomicReference<>();
        CountDownLatch listening = new CountDownLatch(1);
        Thread server = Thread.ofPlatform().name("cmtime-server").start(() -> {
            try {
                serve(address, connections, timeout, listening);
            } catch (Throwable e) {
                serverFailure.set(e);
                listening.countDown();
            }
        });
        listening.await();
        if (serverFailure.get() != null) {
            throw new IllegalStateException("server failed: " + serverFailure.get(), serverFailure.get());
        }
        Map<Step, Double> totals = new EnumMap<>(Step.class);
        try (EventChannel ch = EventChannel.create()) {
            // An id bound to the address gives the device context for the PD, outside the timed steps, as
            // rdma_create_qp's default PD is allocated once per device.
            CmId anchor = ch.createId(PortSpace.TCP);
            anchor.bind(new InetSocketAddress(address.getAddress(), 0));
            RdmaContext ctx = anchor.context();
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CmId[] ids = new CmId[connections];
            CompletionQueue[] cqs = new CompletionQueue[connections];

            long t0 = System.nanoTime();
            for (int i = 0; i < connections; i++) {
                ids[i] = ch.createId(PortSpace.TCP);
            }
            totals.put(Step.CREATE_ID, ms(t0));

            t0 = System.nanoTime();
            for (CmId id : ids) {
                id.resolveAddress(null, address, timeout);
            }
            awaitAll(ch, CmEventType.ADDR_RESOLVED, connections, timeout);
            totals.put(Step.RESOLVE_ADDR, ms(t0));

            t0 = System.nanoTime();
            for (CmId id : ids) {
                id.resolveRoute(timeout);
            }
            awaitAll(ch, CmEventType.ROUTE_RESOLVED, connections, timeout);
            totals.put(Step.RESOLVE_ROUTE, ms(t0));

            t0 = System.nanoTime();
            for (int i = 0; i < connections; i++) {
                cqs[i] = ctx.createCompletionQueue(2, null, 0);
                ids[i].createQueuePair(pd, attributes(cqs[i]));
            }
            totals.put(Step.CREATE_QP, ms(t0));

            t0 = System.nanoTime();
            for (CmId id : ids) {
                id.connect(ConnectionParameters.DEFAULTS);
            }
            awaitAll(ch, CmEventType.ESTABLISHED, connections, timeout);
            totals.put(Step.CONNECT, ms(t0));

            t0 = System.nanoTime();
            for (int i = 0; i < connections; i++) {
                // cmtime's rdma_destroy_qp frees the QP's CQs here too, so its destroy step is the ids alone.
                ids[i].disconnect();
                ids[i].queuePair().close();
                cqs[i].close();
            }
            awaitAll(ch, CmEventType.DISCONNECTED, connections, timeout);
            totals.put(Step.DISCONNECT, ms(t0));

            t0 = System.nanoTime();
            for (int i = 0; i < connections; i++) {
                ids[i].close();
            }
            totals.put(Step.DESTROY, ms(t0));
        }
        server.join(timeout.toMillis() * 4);
        if (serverFailure.get() != null) {
            throw new IllegalStateException("server failed: " + serverFailure.get(), serverFailure.get());
        }
        return new Result(connections, totals);
    }

    private static QpInitAttributes attributes(CompletionQueue cq) {
        // cmtime's QPs: one work request and one SGE each way.
        return QpInitAttributes.builder(QpType.RC).completionQueue(cq).depth(1, 1).sge(1, 1).build();
    }

    private static double ms(long t0) {
        return (System.nanoTime() - t0) / 1e6;
    }

    private static void awaitAll(EventChannel ch, CmEventType type, int count, Duration timeout) {
        for (int got = 0; got < count; ) {
            CmEvent e = ch.awaitEvent(timeout);
            if (e == null) {
                throw new IllegalStateException("waited " + timeout + " for " + type + " events, got " + got + " of "
                        + count);
            }
            if (e.type() == type) {
                got++;
            } else if (e.type() != CmEventType.TIMEWAIT_EXIT) {
                throw new IllegalStateException("expected " + type + ", got " + e);
            }
        }
    }

    /** The passive side: accept each request with a QP, and on DISCONNECTED answer and free it. */
    private static void serve(InetSocketAddress address, int connections, Duration timeout, CountDownLatch listening) {
        try (EventChannel ch = EventChannel.create()) {
            CmId listener = ch.createId(PortSpace.TCP);
            listener.setReuseAddress(true);
            listener.bind(address);
            listener.listen(connections);
            RdmaContext ctx = listener.context();
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            listening.countDown();
            Map<CmId, CompletionQueue> open = new HashMap<>();
            // Computed once: Duration.multipliedBy goes through BigDecimal, work cmtime's server loop does not do.
            Duration wait = timeout.multipliedBy(4);
            int disconnected = 0;
            while (disconnected < connections) {
                CmEvent e = ch.awaitEvent(wait);
                if (e == null) {
                    throw new IllegalStateException("server: no event within " + wait + " ("
                            + disconnected + " of " + connections + " disconnected)");
                }
                switch (e.type()) {
                    case CONNECT_REQUEST -> {
                        CompletionQueue cq = ctx.createCompletionQueue(2, null, 0);
                        e.id().createQueuePair(pd, attributes(cq));
                        open.put(e.id(), cq);
                        e.id().accept(ConnectionParameters.DEFAULTS);
                    }
                    case DISCONNECTED -> {
                        e.id().disconnect();
                        e.id().close();
                        CompletionQueue cq = open.remove(e.id());
                        if (cq != null) {
                            cq.close();
                        }
                        disconnected++;
                    }
                    case ESTABLISHED, TIMEWAIT_EXIT -> {
                    }
                    default -> throw new IllegalStateException("server: unexpected " + e);
                }
            }
        }
    }
}
