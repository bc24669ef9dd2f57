package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AsyncEvent;

/**
 * Completion-queue pressure (issue #43): connections that share CQs ({@link ConnectionOptions#sharedCompletionQueue()})
 * with deep queues (each reserves 256 sends and 259 receives in its CQ, so seven fill one CQ of 4,096 entries), all
 * streaming both ways at once with every credit in use, never overflow a CQ: no {@code IBV_EVENT_CQ_ERR} or
 * {@code IBV_EVENT_QP_FATAL} (a real overflow raises them: {@code ErrorsIT}), every message arrives once, in order
 * and intact, and the process holds as many CQs as the reservations need, more than one per loop. A connection
 * needing more entries than a shared CQ has gets a CQ of its own, closed with it; one needing more than the
 * device's {@code max_cqe} is refused before anything is made ({@code DeviceLimitsIT}).
 */
class CqPressureIT {
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(3));
    private static final int CONNECTIONS = 24;
    private static final int MESSAGES = 150;
    private static final int DEPTH = 256;
    private static final int[] SIZES = {1, 64, 512, 2000, 4000};
    private static final ConnectionOptions OPTIONS = PeerMain.OPTIONS.toBuilder().sharedCompletionQueue(true)
            .sendQueueDepth(DEPTH).receiveBuffers(DEPTH).sendBuffers(DEPTH).bufferSize(4096).build();
    /** What one connection reserves in its CQ: its sends, its credits and the credits protocol's control receives. */
    private static final int RESERVED = DEPTH + DEPTH + ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
    /** More than a shared CQ's 4,096 entries: a CQ of its own on each side. */
    private static final ConnectionOptions BIG = OPTIONS.toBuilder().sendQueueDepth(4_200).build();

    /** Message {@code n} of connection {@code index}; the server's go the other way in a range of their own. */
    private static int seq(int index, int n, boolean fromServer) {
        return index * 100_000 + (fromServer ? 50_000 : 0) + n;
    }

    private static int size(int seq) {
        return SIZES[seq % SIZES.length];
    }

    /** {@return {@code count} messages of connection {@code index}, in order} */
    private static Flux<ByteBuffer> messages(int index, int count, boolean fromServer) {
        return Flux.range(0, count).map(n -> {
            int s = seq(index, n, fromServer);
            return Payloads.message(s, size(s));
        });
    }

    /** Checks each message of {@code c} against the next expected one, counting them in {@code checked}. */
    private static Disposable check(RdmaConnection c, int index, boolean fromServer, AtomicInteger checked,
            AtomicReference<Throwable> error) {
        AtomicInteger next = new AtomicInteger();
        return c.receive().subscribe(m -> {
            try {
                int s = seq(index, next.getAndIncrement(), fromServer);
                Payloads.verify(m.data(), s, size(s));
                checked.incrementAndGet();
            } catch (AssertionError e) {
                error.compareAndSet(null, e);
            } finally {
                m.release();
            }
        }, e -> error.compareAndSet(null, e));
    }

    @Test
    void sharedCqsUnderSustainedTrafficBothWaysNeverOverflow() {
        Map<String, Integer> baseline = Resources.baseline();
        ConcurrentLinkedQueue<AsyncEvent> events = new ConcurrentLinkedQueue<>();
        Disposable watching = RdmaDeviceEvents.events(RdmaTestEnv.device()).subscribe(events::add);
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicInteger atServer = new AtomicInteger();
        AtomicInteger atClients = new AtomicInteger();
        AtomicInteger serverSent = new AtomicInteger();
        InetSocketAddress any = new InetSocketAddress(RdmaTestEnv.address(), 0);
        RdmaServer server = RdmaServer.bind(any, OPTIONS, AcceptFilter.ACCEPT_ALL).block(T);
        RdmaServer bigServer = RdmaServer.bind(any, BIG, AcceptFilter.ACCEPT_ALL).block(T);
        Disposable.Composite handlers = reactor.core.Disposables.composite();
        try {
            // Each accepted connection checks what its client sends and, at the same time, streams its own.
            handlers.add(server.connections().subscribe(c -> {
                int index = ByteBuffer.wrap(c.peerPrivateData()).getInt();
                handlers.add(check(c, index, false, atServer, error));
                handlers.add(c.send(messages(index, MESSAGES, true)).subscribe(null,
                        e -> error.compareAndSet(null, e), serverSent::incrementAndGet));
            }));
            handlers.add(bigServer.connections().subscribe(c -> handlers.add(EchoServer.echo(c, BIG))));
            List<RdmaConnection> clients = Flux.range(0, CONNECTIONS)
                    .flatMapSequential(i -> RdmaConnection.connect(server.address(), OPTIONS.toBuilder()
                            .privateData(ByteBuffer.allocate(4).putInt(0, i).array()).build())
                            .doOnNext(c -> handlers.add(check(c, i, true, atClients, error))), 8)
                    .collectList().block(T);

            // Seven connections fill a shared CQ: the eighth of a loop gets another one.
            Map<String, Integer> open = RdmaResources.snapshot();
            int cqs = open.getOrDefault("cq", 0) - baseline.getOrDefault("cq", 0);
            int perCq = 4096 / RESERVED;
            int loops = Loops.shared().completionLoopsForTest().length;
            int fewest = 2 * ceil(CONNECTIONS, perCq);
            assertTrue(cqs >= fewest && cqs <= fewest + 2 * loops, cqs + " CQs for 2 x " + CONNECTIONS
                    + " connections reserving " + RESERVED + " entries each, " + perCq + " to a CQ, on " + loops + " loops");

            // Everyone streams both ways at once; meanwhile a connection too big for a shared CQ comes and goes.
            Mono<Void> sending = Flux.fromIterable(clients).index()
                    .flatMap(t -> t.getT2().send(messages(t.getT1().intValue(), MESSAGES, false)))
                    .then();
            java.util.concurrent.atomic.AtomicBoolean clientsSent = new java.util.concurrent.atomic.AtomicBoolean();
            handlers.add(sending.subscribe(null, e -> error.compareAndSet(null, e), () -> clientsSent.set(true)));
            int before = RdmaResources.snapshot().getOrDefault("cq", 0);
            RdmaConnection big = RdmaConnection.connect(bigServer.address(), BIG).block(T);
            int withBig = RdmaResources.snapshot().getOrDefault("cq", 0);
            assertEquals(before + 2, withBig, "the big connection's own CQ on each side");
            java.util.concurrent.LinkedBlockingQueue<Object> bigInbox = new java.util.concurrent.LinkedBlockingQueue<>();
            big.receiveBytes().subscribe(bigInbox::add, bigInbox::add);
            for (int n = 0; n < 20; n++) {
                big.send(Payloads.message(n, 4000)).block(T);
                Payloads.verify(Inbox.take(bigInbox, T), n, 4000);
            }
            big.disposeNow(T);
            Awaitility.await("the big connection's CQs closed with it").atMost(T).pollInterval(Duration.ofMillis(200))
                    .until(() -> RdmaResources.snapshot().getOrDefault("cq", 0) == before);

            int total = CONNECTIONS * MESSAGES;
            Awaitility.await("every message both ways").atMost(T).pollInterval(Duration.ofMillis(200))
                    .until(() -> error.get() != null || (atServer.get() == total && atClients.get() == total
                            && serverSent.get() == CONNECTIONS && clientsSent.get()));
            assertNull(error.get(), () -> "a connection failed: " + error.get());
            assertEquals(total, atServer.get());
            assertEquals(total, atClients.get());
            assertTrue(events.stream().noneMatch(e -> e.type() == rdmaflux.verbs.AsyncEventType.CQ_ERR
                    || e.type() == rdmaflux.verbs.AsyncEventType.QP_FATAL), () -> "device events: " + events);
            System.out.printf("CQ pressure: %d connections a side on %d CQs (%d entries reserved each), %d messages "
                    + "checked each way, device events %s%n", CONNECTIONS, cqs, RESERVED, total, events);
            Flux.fromIterable(clients).flatMap(c -> {
                c.dispose();
                return c.onDispose().onErrorResume(e -> Mono.empty());
            }).then().block(T);
        } finally {
            handlers.dispose();
            server.disposeNow(T);
            bigServer.disposeNow(T);
            watching.dispose();
        }
        Resources.awaitBaseline(baseline, T, "after the CQ pressure");
    }

    private static int ceil(int n, int d) {
        return (n + d - 1) / d;
    }
}
