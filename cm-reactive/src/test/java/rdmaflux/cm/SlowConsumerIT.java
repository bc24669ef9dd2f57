package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;

import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaTestEnv;

/**
 * A receiver that takes one message per 100 ms while the sender pushes 10,000: the credit protocol
 * holds the sender back instead of letting the device hit RNR (receiver not ready) or drop anything.
 */
class SlowConsumerIT {
    private static final Duration T = Duration.ofMinutes(3);
    private static final int COUNT = 10_000;
    /**
     * Consuming all 10,000 at one per 100 ms would take 17 minutes: the first {@value} are slow
     * (10 s, during which the sender could have sent all 10,000 many times over and exhausted the
     * 16 credits ~6 times), the rest are consumed at full speed.
     */
    private static final int SLOW = 100;
    private static final Duration DELAY = Duration.ofMillis(100);
    private static final int RECEIVE_BUFFERS = 16;
    private static final int[] SIZES = {1, 17, 256, 4096};

    @Test
    void slowConsumerHoldsTheSenderBackWithoutRnrOrLoss() throws Exception {
        ConnectionOptions receiverOptions = ConnectionOptions.defaults().toBuilder().receiveBuffers(RECEIVE_BUFFERS)
                .build();
        AtomicLong creditWaits = new AtomicLong();
        ConnectionOptions senderOptions = ConnectionOptions.defaults().toBuilder().recorder(new RdmaRecorder() {
            @Override
            public void creditWait() {
                creditWaits.incrementAndGet();
            }
        }).build();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), receiverOptions,
                AcceptFilter.ACCEPT_ALL).block(T);
        try {
            var accepted = server.connections().next().cache();
            accepted.subscribe();
            Map<String, Long> before = HwCounters.read();
            RdmaConnection sender = RdmaConnection.connect(server.address(), senderOptions).block(T);
            RdmaConnection receiver = accepted.block(T);

            AtomicLong released = new AtomicLong();
            AtomicLong completed = new AtomicLong();
            AtomicLong maxAhead = new AtomicLong();
            AtomicLong completedWhenSlowEnded = new AtomicLong(-1);
            ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
            SlowSubscriber consumer = new SlowSubscriber(released, completed, completedWhenSlowEnded);
            receiver.receive().subscribe(consumer);

            long start = System.nanoTime();
            Flux.range(0, COUNT).flatMapSequential(i -> sender.send(Payloads.message(i, size(i)))
                    .doOnSuccess(v -> {
                        // Read released first: it only grows, so the check can only err on the lenient side
                        // of the exact bound (a send needs a credit: one of the 16 granted at connect, or
                        // one returned by a release).
                        long r = released.get();
                        long done = completed.incrementAndGet();
                        maxAhead.accumulateAndGet(done - r, Math::max);
                        if (done > r + RECEIVE_BUFFERS) {
                            violations.add("send " + done + " completed with only " + r + " released");
                        }
                    }), senderOptions.sendBuffers()).then().block(T);
            if (!consumer.done.await(T.toSeconds(), TimeUnit.SECONDS)) {
                fail("the consumer got only " + consumer.next.get() + " messages");
            }
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertNull(consumer.error.get(), () -> "receive failed: " + consumer.error.get());
            assertEquals(COUNT, consumer.next.get(), "messages delivered");
            assertTrue(violations.isEmpty(), () -> violations.size() + " credit violations, first: " + violations.peek());
            // While the consumer dawdled, the sender got at most the credits' worth ahead of it.
            long atSlowEnd = completedWhenSlowEnded.get();
            assertTrue(atSlowEnd >= 0 && atSlowEnd <= SLOW + RECEIVE_BUFFERS,
                    "sends completed when the slow phase ended: " + atSlowEnd);
            assertTrue(creditWaits.get() > 0, "the sender never waited for a credit");

            sender.disposeNow(T);
            receiver.onDispose().block(T);
            Map<String, Long> delta = HwCounters.delta(before, HwCounters.read());
            System.out.printf("slow consumer: %d messages in %d ms, sender at most %d ahead, %d credit waits; "
                    + "device counter deltas %s%n", COUNT, millis, maxAhead.get(), creditWaits.get(), delta);
            Map<String, Long> rnr = new java.util.TreeMap<>();
            delta.forEach((k, v) -> {
                if (k.contains("rnr")) {
                    rnr.put(k, v);
                }
            });
            assertTrue(!rnr.isEmpty(), "the device has no RNR counters: " + delta.keySet());
            if (RdmaTestEnv.inSandbox()) {
                assertTrue(rnr.keySet().containsAll(java.util.List.of("rcvd_rnr_err", "send_rnr_err",
                        "retry_rnr_exceeded_err")), "rxe's RNR counters: " + rnr.keySet());
            }
            rnr.forEach((k, v) -> assertEquals(0L, v, "RNR counter " + k + " moved: " + delta));
        } finally {
            server.disposeNow(T);
        }
    }

    private static int size(int seq) {
        return SIZES[seq % SIZES.length];
    }

    /**
     * Requests one message at a time; holds each of the first {@value #SLOW} for 100 ms before releasing
     * it (its buffer, and so the sender's credit, stays taken meanwhile) and requesting the next.
     */
    private static final class SlowSubscriber extends BaseSubscriber<RdmaMessage> {
        final AtomicInteger next = new AtomicInteger();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final CountDownLatch done = new CountDownLatch(1);
        private final AtomicLong released;
        private final AtomicLong completed;
        private final AtomicLong completedWhenSlowEnded;

        SlowSubscriber(AtomicLong released, AtomicLong completed, AtomicLong completedWhenSlowEnded) {
            this.released = released;
            this.completed = completed;
            this.completedWhenSlowEnded = completedWhenSlowEnded;
        }

        @Override
        protected void hookOnSubscribe(Subscription s) {
            request(1);
        }

        @Override
        protected void hookOnNext(RdmaMessage m) {
            int seq = next.getAndIncrement();
            try {
                Payloads.verify(m.data(), seq, size(seq));
            } catch (AssertionError e) {
                m.release();
                error.set(e);
                done.countDown();
                cancel();
                return;
            }
            if (seq == SLOW) {
                completedWhenSlowEnded.set(completed.get());
            }
            if (seq < SLOW) {
                Schedulers.parallel().schedule(() -> releaseAndRequest(m, seq), DELAY.toMillis(),
                        TimeUnit.MILLISECONDS);
            } else {
                releaseAndRequest(m, seq);
            }
        }

        private void releaseAndRequest(RdmaMessage m, int seq) {
            released.incrementAndGet(); // before release(): the credit must never be counted late
            m.release();
            if (seq + 1 == COUNT) {
                done.countDown();
            } else {
                request(1);
            }
        }

        @Override
        protected void hookOnError(Throwable t) {
            error.set(t);
            done.countDown();
        }
    }
}
