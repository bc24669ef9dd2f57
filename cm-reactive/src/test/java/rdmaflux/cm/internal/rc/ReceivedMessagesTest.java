package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Operators;
import reactor.core.publisher.Sinks;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import rdmaflux.cm.RdmaMessage;

/**
 * The auto-releasing styles of {@code receive()} on synthetic messages: when each message is released, and
 * that a retained one is not. The lending of recycled receive slots and the release of real buffers are
 * {@code MessageReleaseIT}'s.
 */
class ReceivedMessagesTest {
    private static final Duration T = Duration.ofSeconds(10);

    /** A message that counts its releases and says whether it was released when asked. */
    static final class Message implements RdmaMessage, Retainable {
        final byte[] payload;
        int releases;
        boolean retained;

        Message(String text) {
            payload = text.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public MemorySegment data() {
            if (releases > 0) {
                throw new IllegalStateException("message used after release()");
            }
            return MemorySegment.ofArray(payload);
        }

        @Override
        public int length() {
            return payload.length;
        }

        @Override
        public boolean isWriteNotification() {
            return false;
        }

        @Override
        public int immediate() {
            return 0;
        }

        @Override
        public RdmaMessage retain() {
            retained = true;
            return this;
        }

        @Override
        public boolean retained() {
            return retained;
        }

        @Override
        public void release() {
            releases++;
        }
    }

    private static List<Message> messages(String... texts) {
        List<Message> list = new ArrayList<>();
        for (String t : texts) {
            list.add(new Message(t));
        }
        return list;
    }

    private static ReceivedMessages of(List<Message> list) {
        return new ReceivedMessages(Flux.fromIterable(list), "synthetic");
    }

    @Test
    void eachMessageIsReleasedOnceItsOnNextReturned() {
        List<Message> list = messages("a", "b", "c");
        List<Integer> releasesDuringOnNext = new ArrayList<>();
        StepVerifier.create(of(list).autoRelease().doOnNext(m -> releasesDuringOnNext.add(((Message) m).releases)))
                .expectNextCount(3).expectComplete().verify(T);
        assertEquals(List.of(0, 0, 0), releasesDuringOnNext, "released before the subscriber had it");
        list.forEach(m -> assertEquals(1, m.releases, "released once"));
    }

    @Test
    void aRetainedMessageIsTheSubscribersToRelease() {
        List<Message> list = messages("keep", "drop");
        List<RdmaMessage> kept = new ArrayList<>();
        StepVerifier.create(of(list).autoRelease().doOnNext(m -> {
            if (new String(m.toByteArray(), StandardCharsets.UTF_8).equals("keep")) {
                kept.add(m.retain());
            }
        })).expectNextCount(2).expectComplete().verify(T);
        assertEquals(0, list.get(0).releases, "a retained message was released");
        assertEquals(1, list.get(1).releases);
        assertEquals("keep", new String(kept.getFirst().toByteArray(), StandardCharsets.UTF_8));
        kept.getFirst().release();
        assertEquals(1, list.get(0).releases);
    }

    @Test
    void aMessageAnOperatorDropsIsReleasedToo() {
        List<Message> list = messages("1", "2", "3", "4");
        StepVerifier.create(of(list).autoRelease().filter(m -> m.toByteArray()[0] % 2 == 0))
                .expectNextCount(2).expectComplete().verify(T);
        list.forEach(m -> assertEquals(1, m.releases, "a dropped message stayed unreleased"));
    }

    @Test
    void asStringAsByteArrayAndAggregateCopyThenRelease() {
        List<Message> strings = messages("héllo", "RDMA");
        StepVerifier.create(of(strings).asString()).expectNext("héllo", "RDMA").expectComplete().verify(T);
        strings.forEach(m -> assertEquals(1, m.releases));

        List<Message> bytes = messages("x", "yz");
        StepVerifier.create(of(bytes).asByteArray())
                .assertNext(b -> assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), b))
                .assertNext(b -> assertArrayEquals("yz".getBytes(StandardCharsets.UTF_8), b))
                .expectComplete().verify(T);
        bytes.forEach(m -> assertEquals(1, m.releases));

        List<Message> parts = messages("one ", "two ", "three");
        StepVerifier.create(of(parts).aggregate())
                .assertNext(b -> assertEquals("one two three", new String(b, StandardCharsets.UTF_8)))
                .expectComplete().verify(T);
        parts.forEach(m -> assertEquals(1, m.releases));
    }

    @Test
    void subscribedAsItIsNothingIsReleasedForTheSubscriber() {
        List<Message> list = messages("a", "b");
        StepVerifier.create(of(list)).expectNextCount(2).expectComplete().verify(T);
        list.forEach(m -> {
            assertEquals(0, m.releases, "receive() itself released a message its subscriber got");
            assertFalse(m.retained);
        });
        assertTrue(list.stream().allMatch(m -> m.data().byteSize() > 0));
    }

    /**
     * The connection's sink keeps its subscriber for the connection's life (Reactor's unicast sink does not let
     * go of it): what the sink reaches of the application's subscriber must end with the subscription.
     */
    @Test
    void anEndedSubscriptionLetsGoOfTheApplicationsSubscriber() {
        for (boolean cancel : new boolean[] {false, true}) {
            Sinks.Many<RdmaMessage> connection = Sinks.many().unicast().onBackpressureBuffer();
            AtomicReference<Subscription> subscription = new AtomicReference<>();
            BaseSubscriber<RdmaMessage> application = new BaseSubscriber<>() {
                @Override
                protected void hookOnSubscribe(Subscription s) {
                    subscription.set(s);
                    request(Long.MAX_VALUE);
                }
            };
            new ReceivedMessages(connection.asFlux(), "test").subscribe(application);
            Scannable held = Scannable.from(subscription.get());
            assertSame(application, held.scanUnsafe(Scannable.Attr.ACTUAL));
            if (cancel) {
                application.cancel();
            } else {
                connection.tryEmitComplete();
            }
            assertNull(held.scanUnsafe(Scannable.Attr.ACTUAL), cancel ? "cancelled" : "completed");
        }
    }

    @Test
    void aMessageArrivingAfterTheCancelIsReleased() {
        AtomicReference<CoreSubscriber<? super RdmaMessage>> upstream = new AtomicReference<>();
        Flux<RdmaMessage> racing = new Flux<>() {
            @Override
            public void subscribe(CoreSubscriber<? super RdmaMessage> s) {
                upstream.set(s);
                s.onSubscribe(Operators.emptySubscription()); // a source that emits past a cancel
            }
        };
        BaseSubscriber<RdmaMessage> application = new BaseSubscriber<>() {
        };
        new ReceivedMessages(racing, "test").subscribe(application);
        application.cancel();
        Message late = new Message("late");
        upstream.get().onNext(late);
        assertEquals(1, late.releases);
    }
}
