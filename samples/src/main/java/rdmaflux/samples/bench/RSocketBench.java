package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import io.rsocket.Closeable;
import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.transport.ClientTransport;
import io.rsocket.transport.netty.client.TcpClientTransport;
import io.rsocket.transport.netty.server.TcpServerTransport;
import io.rsocket.util.DefaultPayload;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;

/**
 * An RSocket client and server in this process, over rdmaflux ({@code rdmaflux.cm.rsocket}) or over
 * RSocket's own TCP transport ({@code rsocket-transport-netty}), for the request-response latency and the
 * request-stream rate. The server's handler is what an application writes: request-response answers with a
 * payload of the request's size, request-stream emits the asked number of payloads of the asked size.
 * Payloads are made once and reused ({@link DefaultPayload} is immutable and not reference-counted), so the
 * loops allocate nothing of their own per message.
 *
 * <p>Over RDMA both sides run on their own {@link Sides}, as {@link ReactiveStream}'s do, with the transports'
 * default options otherwise: frames handled on the completion loops ({@code RdmaClientTransport.defaultOptions()}).
 */
final class RSocketBench implements AutoCloseable {
    /** The transport under RSocket. */
    enum Transport {
        /** rdmaflux: {@code RdmaClientTransport}/{@code RdmaServerTransport}. */
        RDMA,
        /** RSocket's TCP transport on Reactor Netty. */
        TCP
    }

    private final Duration timeout;
    private final AtomicLong arrived = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile long lastArrival;
    private volatile Thread waiter;
    /** The count at which the waiting thread wants to be woken (see {@link ReactiveStream}'s). */
    private volatile long arrivedTarget;
    private Sides client;
    private Sides server;
    private Closeable closeable;
    private RSocket rsocket;

    private RSocketBench(Duration timeout) {
        this.timeout = timeout;
    }

    /**
     * Starts a server on {@code address} and connects a client to it.
     *
     * @param transport RDMA or TCP
     * @param address the interface's address (port 0: any)
     * @param maxSize the largest payload to be sent (over RDMA, frames up to it go as one SEND)
     * @param timeout the longest wait for any step, and for a run to make progress
     * @return the connected pair
     */
    static RSocketBench open(Transport transport, InetSocketAddress address, int maxSize, Duration timeout) {
        RSocketBench b = new RSocketBench(timeout);
        try {
            RSocketServer server = RSocketServer.create(SocketAcceptor.with(responder()));
            ClientTransport ct;
            if (transport == Transport.RDMA) {
                b.client = new Sides("bench-rsocket-cli", true);
                b.server = new Sides("bench-rsocket-srv", true);
                // Room for the frame's header (at most 9 bytes for a PAYLOAD frame with a length prefix).
                ConnectionOptions base = RdmaClientTransport.defaultOptions().toBuilder()
                        .bufferSize(Math.max(ConnectionOptions.defaults().bufferSize(), maxSize + 64)).build();
                RdmaCloseableServer s = server.bind(RdmaServerTransport.create(address, b.server.options(base),
                        AcceptFilter.ACCEPT_ALL)).block(timeout);
                b.closeable = s;
                ct = RdmaClientTransport.create(s.address(), b.client.options(base));
            } else {
                var s = server.bind(TcpServerTransport.create(address)).block(timeout);
                b.closeable = s;
                ct = TcpClientTransport.create(s.address());
            }
            b.rsocket = RSocketConnector.create().connect(ct).block(timeout);
            return b;
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /** The application's handler: answers of the request's size, streams of the asked count and size. */
    private static RSocket responder() {
        Map<Integer, Payload> replies = new ConcurrentHashMap<>();
        return new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload request) {
                int size = request.data().readableBytes();
                request.release();
                return Mono.just(replies.computeIfAbsent(size, k -> DefaultPayload.create(new byte[k])));
            }

            @Override
            public Flux<Payload> requestStream(Payload request) {
                int size = request.data().getInt(0);
                int n = request.data().getInt(4);
                request.release();
                Payload reply = replies.computeIfAbsent(size, k -> DefaultPayload.create(new byte[k]));
                // The same payload n times without boxing a counter per item: the bench adds nothing per message.
                return Flux.from(new ReactiveStream.Repeat<>(reply, n));
            }
        };
    }

    /**
     * Request-response ping-pong: each request is sent when the previous answer arrived.
     *
     * @param size payload size of requests and answers
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @return timestamps and the heap bytes all threads allocated per message (both directions) while timed
     */
    VerbsTests.Latency requestResponse(int size, int warmup, int iters) {
        waiter = Thread.currentThread();
        Payload request = DefaultPayload.create(new byte[size]);
        Answers answers = new Answers(this);
        arrivedTarget = 0; // a ping-pong wants every answer
        long[] stamps = new long[iters + 1];
        long a0 = 0;
        long base = arrived.get();
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) {
                a0 = Sides.THREADS.getTotalThreadAllocatedBytes();
            }
            if (i >= warmup) {
                stamps[i - warmup] = System.nanoTime();
            }
            rsocket.requestResponse(request).subscribe(answers);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (arrived.get() - base <= i) {
                check("request-response");
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("RSocket request-response: no answer within " + timeout);
                }
                LockSupport.parkNanos(1_000_000);
            }
        }
        stamps[iters] = System.nanoTime();
        long allocated = Sides.THREADS.getTotalThreadAllocatedBytes() - a0;
        return new VerbsTests.Latency(stamps, allocated, 2L * iters);
    }

    /**
     * One request-stream of {@code n} payloads of {@code size} bytes, consumed as fast as they come (the
     * subscriber's demand is unbounded; RSocket's REQUEST_N and, over RDMA, credits pace the server).
     *
     * @return messages / (request → last payload released by the subscriber), and the heap bytes all
     *         threads allocated per message
     */
    ReactiveStream.Run requestStream(int size, int n) {
        waiter = Thread.currentThread();
        long base = arrived.get();
        long done0 = completed.get();
        Payload request = DefaultPayload.create(java.nio.ByteBuffer.allocate(8).putInt(0, size).putInt(4, n));
        arrivedTarget = base + n;
        long a0 = Sides.THREADS.getTotalThreadAllocatedBytes();
        long t0 = System.nanoTime();
        rsocket.requestStream(request).subscribe(new Answers(this));
        long seen = base;
        long progress = System.nanoTime();
        while (arrived.get() < base + n || completed.get() == done0) {
            check("request-stream");
            long now = arrived.get();
            if (now != seen) {
                seen = now;
                progress = System.nanoTime();
            } else if (System.nanoTime() - progress > timeout.toNanos()) {
                throw new IllegalStateException("RSocket request-stream of " + Row.sizeText(size) + ": "
                        + (now - base) + " of " + n + " payloads after " + timeout + " without progress");
            }
            LockSupport.parkNanos(10_000_000);
        }
        long t1 = lastArrival;
        long all = Sides.THREADS.getTotalThreadAllocatedBytes() - a0;
        return new ReactiveStream.Run(n / ((t1 - t0) / 1e9), (double) all / n, Double.NaN, Double.NaN, Double.NaN);
    }

    private void check(String what) {
        Throwable f = failure.get();
        if (f != null) {
            throw new IllegalStateException("RSocket " + what + " failed: " + f, f);
        }
    }

    @Override
    public void close() {
        if (rsocket != null) {
            rsocket.dispose();
            rsocket.onClose().onErrorComplete().block(timeout);
        }
        if (closeable != null) {
            closeable.dispose();
            closeable.onClose().onErrorComplete().block(timeout);
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /**
     * Takes the answers of requests: releases each, counts it. One instance may serve many requests (the
     * request-response loop), so it keeps no subscription and asks for everything.
     */
    private static final class Answers implements CoreSubscriber<Payload> {
        private final RSocketBench owner;

        Answers(RSocketBench owner) {
            this.owner = owner;
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Payload p) {
            long now = System.nanoTime();
            p.release();
            owner.lastArrival = now;
            if (owner.arrived.incrementAndGet() >= owner.arrivedTarget) {
                LockSupport.unpark(owner.waiter);
            }
        }

        @Override
        public void onError(Throwable t) {
            owner.failure.compareAndSet(null, t);
            LockSupport.unpark(owner.waiter);
        }

        @Override
        public void onComplete() {
            owner.completed.incrementAndGet();
            LockSupport.unpark(owner.waiter);
        }
    }
}
