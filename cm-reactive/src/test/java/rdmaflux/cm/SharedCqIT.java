package rdmaflux.cm;

import rdmaflux.cm.internal.loop.Loops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Connections sharing completion queues ({@link ConnectionOptions#sharedCompletionQueue()}), on both the
 * client and the server side of one process: every message is checked on arrival at both ends (each
 * connection has its own sequence numbers, so one delivered to another connection fails), the process
 * holds a few CQs rather than one per connection, half the connections close while the other half keep
 * sending, and the kernel's objects are back to the baseline at the end.
 */
@Timeout(value = 8, unit = java.util.concurrent.TimeUnit.MINUTES)
class SharedCqIT {
    private static final Duration T = Duration.ofMinutes(3);
    private static final int CONNECTIONS = 50;
    private static final int MESSAGES = 20;
    private static final int[] SIZES = {1, 17, 256, 1000, 4096, 8000};
    private static final ConnectionOptions OPTIONS = PeerMain.OPTIONS.toBuilder().sharedCompletionQueue(true).build();

    /** The {@code n}-th message of connection {@code index}, in either direction. */
    private static int seq(int index, int n) {
        return index * 1_000 + n;
    }

    private static int size(int seq) {
        return SIZES[seq % SIZES.length];
    }

    /** A client connection, its index, and the echoes it checked so far. */
    private static final class Client {
        final RdmaConnection connection;
        final int index;
        final AtomicInteger echoed = new AtomicInteger();
        volatile boolean closing;

        Client(RdmaConnection connection, int index, AtomicReference<Throwable> error) {
            this.connection = connection;
            this.index = index;
            connection.receive().subscribe(m -> {
                try {
                    int s = seq(index, echoed.get());
                    Payloads.verify(m.data(), s, size(s));
                    echoed.incrementAndGet();
                } catch (AssertionError e) {
                    error.compareAndSet(null, e);
                } finally {
                    m.release();
                }
            }, e -> {
                if (!closing) {
                    error.compareAndSet(null, e);
                }
            });
        }

        Mono<Void> close() {
            closing = true;
            connection.dispose();
            return connection.onDispose().onErrorResume(e -> Mono.empty());
        }
    }

    @Test
    void connectionsOnSharedCqsGetTheirOwnMessagesOnly() {
        Map<String, Integer> baseline = Resources.baseline();
        AtomicReference<Throwable> serverError = new AtomicReference<>();
        AtomicReference<Throwable> clientError = new AtomicReference<>();
        AtomicInteger serverVerified = new AtomicInteger();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), OPTIONS,
                AcceptFilter.ACCEPT_ALL).block(T);
        List<Client> clients = new ArrayList<>();
        try {
            // The server checks each message (the client's index is its private data) and echoes it back.
            server.connections().subscribe(c -> {
                int index = ByteBuffer.wrap(c.peerPrivateData()).getInt();
                AtomicInteger n = new AtomicInteger();
                c.receive().concatMap(m -> {
                    int s = seq(index, n.getAndIncrement());
                    try {
                        Payloads.verify(m.data(), s, size(s));
                        serverVerified.incrementAndGet();
                    } catch (AssertionError e) {
                        serverError.compareAndSet(null, e);
                    }
                    return c.send(m.asByteBuffer()).doFinally(x -> m.release());
                }).subscribe(null, e -> serverError.compareAndSet(null, e));
            });
            Flux.range(0, CONNECTIONS)
                    .flatMapSequential(i -> RdmaConnection.connect(server.address(), OPTIONS.toBuilder().privateData(
                            ByteBuffer.allocate(4).putInt(0, i).array()).build()).map(c -> new Client(c, i, clientError)), 10)
                    .doOnNext(clients::add).then().block(T);
            assertEquals(CONNECTIONS, clients.size());

            // 2 x 50 queue pairs in this process; without sharing as many CQs, with it a few per loop.
            Map<String, Integer> open = RdmaResources.snapshot();
            int qps = open.get("qp") - baseline.get("qp");
            int cqs = open.getOrDefault("cq", 0) - baseline.getOrDefault("cq", 0);
            assertTrue(qps >= 2 * CONNECTIONS, "qps while connected: " + open);
            // Per side and loop: 25 connections of 163 entries fit in one CQ of 4,096; one more each for
            // the spread of connections over the loops.
            int loops = Loops.shared().completionLoopsForTest().length;
            assertTrue(cqs <= 2 * 2 * loops, cqs + " CQs for " + qps + " queue pairs on " + loops + " loops");
            assertTrue(cqs < CONNECTIONS / 5, cqs + " CQs for " + CONNECTIONS + " connections");

            // Everyone exchanges its first messages.
            exchange(clients, 0);

            // Half close while the other half exchange their next messages.
            List<Client> closing = new ArrayList<>();
            List<Client> staying = new ArrayList<>();
            for (Client c : clients) {
                (c.index % 2 == 0 ? closing : staying).add(c);
            }
            var closed = Flux.fromIterable(closing).flatMap(Client::close).then().toFuture();
            exchange(staying, MESSAGES);
            closed.get(T.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            // And once more with the others gone: their queue pairs' numbers left the shared CQs.
            exchange(staying, 2 * MESSAGES);

            assertNull(serverError.get(), () -> "the server: " + serverError.get());
            assertNull(clientError.get(), () -> "a client: " + clientError.get());
            int expected = CONNECTIONS * MESSAGES + 2 * staying.size() * MESSAGES;
            assertEquals(expected, serverVerified.get());
            System.out.printf("shared CQs: %d connections (%d queue pairs) on %d CQs, %d loops; %d messages checked "
                    + "each way%n", CONNECTIONS, qps, cqs, loops, expected);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } finally {
            Flux.fromIterable(clients).flatMap(Client::close).then().block(T);
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, Duration.ofSeconds(60), "after closing every connection on shared CQs");
    }

    /**
     * Each client sends its messages {@code from} to {@code from + MESSAGES - 1}; returns once every echo
     * of them was checked.
     */
    private static void exchange(List<Client> clients, int from) {
        Flux.fromIterable(clients).flatMap(c -> c.connection.send(Flux.range(from, MESSAGES)
                .map(n -> Payloads.message(seq(c.index, n), size(seq(c.index, n))))), clients.size()).then().block(T);
        long deadline = System.nanoTime() + T.toNanos();
        for (Client c : clients) {
            while (c.echoed.get() < from + MESSAGES && System.nanoTime() < deadline) {
                Resources.sleep(20);
            }
            assertEquals(from + MESSAGES, c.echoed.get(), "echoes checked by client " + c.index);
        }
    }
}
