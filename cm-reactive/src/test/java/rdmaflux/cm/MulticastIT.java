package rdmaflux.cm;

import rdmaflux.cm.internal.datagram.GroupSender;
import rdmaflux.cm.internal.datagram.SharedGroup;
import rdmaflux.cm.internal.datagram.UdQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static rdmaflux.cm.MulticastTestSupport.await;
import static rdmaflux.cm.MulticastTestSupport.awaitResources;
import static rdmaflux.cm.MulticastTestSupport.isPayload;
import static rdmaflux.cm.MulticastTestSupport.payload;
import static rdmaflux.cm.MulticastTestSupport.seq;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import rdmaflux.cm.MulticastTestSupport.Tool;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;

/**
 * Multicast on the real device: interoperability with rdma-core's mckey in both directions, several
 * groups, leave and re-join, shared joins, a long sequenced run, backpressure with counted drops, and
 * the error cases.
 */
class MulticastIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final InetAddress LOCAL = RdmaTestEnv.address();
    private static final MulticastOptions OPTIONS = MulticastOptions.builder().localAddress(LOCAL).build();

    private static InetAddress group(int last) throws Exception {
        return InetAddress.getByName("239.1.1." + last);
    }

    private static List<Integer> range(int from, int count) {
        return java.util.stream.IntStream.range(from, from + count).boxed().toList();
    }

    private static List<String> mckey(InetAddress group, String... more) {
        List<String> cmd = new java.util.ArrayList<>(List.of("mckey", "-m", group.getHostAddress(), "-b",
                LOCAL.getHostAddress()));
        cmd.addAll(List.of(more));
        return cmd;
    }

    @Test
    void mckeySenderReachesOurReceiver() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(1);
        MulticastMembership m = RdmaMulticast.join(group, OPTIONS).block(T);
        try (Tool sender = new Tool(mckey(group, "-s", "-C", "20", "-S", "100"))) {
            assertEquals(0, sender.exitCode(T), sender.output());
        }
        // Subscribing late is fine: the membership kept what arrived (up to its receive buffers).
        List<Datagram> got = m.datagrams().take(20).collectList().block(T);
        assertEquals(20, got.size());
        int mckeyQpn = got.getFirst().sourceQpn();
        assertNotEquals(m.qpNumber(), mckeyQpn);
        for (Datagram d : got) {
            assertEquals(100, d.length());
            assertEquals(LOCAL, d.source());
            assertEquals(group, d.destination());
            assertEquals(mckeyQpn, d.sourceQpn());
            // mckey sends SEND_WITH_IMM with its own QP number as the immediate.
            assertEquals(OptionalInt.of(mckeyQpn), d.immediate());
        }
        m.dispose();
        m.onDispose().block(T);
        awaitResources(baseline, T);
    }

    @Test
    void ourSenderReachesMckeyReceiver() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(2);
        try (Tool receiver = new Tool(mckey(group, "-C", "20", "-S", "100"))) {
            // mckey posts its 20 receives before it joins, so once it says "joined" nothing can be lost.
            receiver.awaitLine(l -> l.contains("joined"), T);
            MulticastSender s = RdmaMulticast.sender(group, OPTIONS).block(T);
            assertTrue(s.isSendOnly(), "this kernel accepts RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER on RoCE");
            assertEquals(0xFFFFFF, ((GroupSender) s).joinParameters().qpNumber());
            s.send(Flux.range(0, 20).map(i -> payload(i, 100))).block(T);
            assertEquals(0, receiver.exitCode(T), receiver.output());
            assertTrue(receiver.output().contains("data transfers complete"), receiver.output());
            s.dispose();
            s.onDispose().block(T);
        }
        awaitResources(baseline, T);
    }

    @Test
    void twoGroupsAtOnce() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress g3 = group(3);
        InetAddress g4 = group(4);
        MulticastMembership m3 = RdmaMulticast.join(g3, OPTIONS).block(T);
        MulticastMembership m4 = RdmaMulticast.join(g4, OPTIONS).block(T);
        assertNotEquals(m3.qpNumber(), m4.qpNumber());
        MulticastSender s3 = RdmaMulticast.sender(g3, OPTIONS).block(T);
        MulticastSender s4 = RdmaMulticast.sender(g4, OPTIONS).block(T);
        int n = 20;
        // Interleaved: 3000+i to one group, 4000+i to the other.
        Flux.range(0, n).concatMap(i -> s3.send(payload(3000 + i, 64)).then(s4.send(payload(4000 + i, 64))))
                .then().block(T);
        StepVerifier.create(m3.datagrams().take(n).map(MulticastTestSupport::seq))
                .expectNextSequence(range(3000, n)).expectComplete().verify(T);
        StepVerifier.create(m4.datagrams().take(n).map(MulticastTestSupport::seq))
                .expectNextSequence(range(4000, n)).expectComplete().verify(T);
        for (reactor.core.Disposable d : List.of(m3, m4, s3, s4)) {
            d.dispose();
        }
        m3.onDispose().then(m4.onDispose()).then(s3.onDispose()).then(s4.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void leaveAndRejoin() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(5);
        MulticastSender s = RdmaMulticast.sender(group, OPTIONS).block(T);

        int joinsBefore = SharedGroup.activeJoins();
        MulticastMembership first = RdmaMulticast.join(group, OPTIONS).block(T);
        s.send(Flux.range(0, 5).map(i -> payload(i, 32))).block(T);
        StepVerifier.create(first.datagrams().take(5).map(MulticastTestSupport::seq))
                .expectNext(0, 1, 2, 3, 4).expectComplete().verify(T);
        first.dispose();
        first.onDispose().block(T);
        assertEquals(joinsBefore, SharedGroup.activeJoins());

        // Nobody is attached now: this one goes nowhere, and must not show up after the re-join.
        s.send(payload(99, 32)).block(T);

        MulticastMembership second = RdmaMulticast.join(group, OPTIONS).block(T);
        s.send(Flux.range(100, 5).map(i -> payload(i, 32))).block(T);
        StepVerifier.create(second.datagrams().take(5).map(MulticastTestSupport::seq))
                .expectNext(100, 101, 102, 103, 104).expectComplete().verify(T);
        second.dispose();
        s.dispose();
        second.onDispose().then(s.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void subscribersShareOneJoin() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(6);
        int joinsBefore = SharedGroup.activeJoins();
        MulticastMembership a = RdmaMulticast.join(group, OPTIONS).block(T);
        MulticastMembership b = RdmaMulticast.join(group, OPTIONS).block(T);
        assertEquals(a.qpNumber(), b.qpNumber(), "one QP for both subscribers");
        assertEquals(joinsBefore + 1, SharedGroup.activeJoins());
        assertEquals(baseline.get("qp") + 1, MulticastTestSupport.resources().get("qp"));
        assertEquals(baseline.get("cm_id") + 1, MulticastTestSupport.resources().get("cm_id"));

        MulticastSender s = RdmaMulticast.sender(group, OPTIONS).block(T);
        s.send(Flux.range(0, 10).map(i -> payload(i, 48))).block(T);
        StepVerifier.create(a.datagrams().take(10).map(MulticastTestSupport::seq))
                .expectNextSequence(range(0, 10)).expectComplete().verify(T);
        Flux<Integer> bSeqs = b.datagrams().map(MulticastTestSupport::seq).cache();
        StepVerifier.create(bSeqs.take(10)).expectNextSequence(range(0, 10)).expectComplete()
                .verify(T);

        // One subscriber leaves; the join stays for the other.
        a.dispose();
        a.onDispose().block(T);
        assertEquals(joinsBefore + 1, SharedGroup.activeJoins());
        s.send(Flux.range(10, 5).map(i -> payload(i, 48))).block(T);
        StepVerifier.create(bSeqs.skip(10).take(5)).expectNext(10, 11, 12, 13, 14).expectComplete().verify(T);

        b.dispose();
        s.dispose();
        b.onDispose().then(s.onDispose()).block(T);
        assertEquals(joinsBefore, SharedGroup.activeJoins());
        awaitResources(baseline, T);
    }

    @Test
    void tenThousandDatagramsInSequence() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(7);
        int joinsBefore = SharedGroup.activeJoins();
        int n = 10_000;
        int window = 100;
        MulticastOptions options = OPTIONS.toBuilder().receiveBuffers(256).sendBuffers(100).build();
        AtomicInteger received = new AtomicInteger();
        AtomicInteger disorder = new AtomicInteger();
        AtomicInteger last = new AtomicInteger(-1);
        AtomicInteger corrupt = new AtomicInteger();
        Disposable subscription = RdmaMulticast.joinMulticast(group, options).subscribe(d -> {
            int seq = seq(d);
            if (seq <= last.getAndSet(seq)) {
                disorder.incrementAndGet();
            }
            if (!isPayload(d, seq, 200)) {
                corrupt.incrementAndGet();
            }
            received.incrementAndGet();
        });
        // A second share of the same join only serves to know when the join is in place.
        MulticastMembership barrier = RdmaMulticast.join(group, options).block(T);
        String device = barrier.deviceName();
        int port = barrier.portNumber();
        barrier.dispose();
        MulticastSender s = RdmaMulticast.sender(group, options).block(T);
        assertTrue(s.isSendOnly());

        PortCounters before = PortCounters.read(device, port);
        long started = System.nanoTime();
        for (int base = 0; base < n; base += window) {
            int from = base;
            s.send(Flux.range(from, Math.min(window, n - from)).map(i -> payload(i, 200))).block(T);
            // Pace by what arrived (loss would stall this, so it gives up after a while and counts).
            int target = Math.min(n, from + window);
            long end = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (received.get() < target && System.nanoTime() - end < 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }
        }
        // Everything sent either reached us or was dropped by the device, which counts it; wait for the books to close.
        await("every datagram to be received or counted as dropped", Duration.ofSeconds(10),
                () -> received.get() + PortCounters.read(device, port).minus(before).undelivered() >= n);
        PortCounters delta = PortCounters.read(device, port).minus(before);
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;
        System.out.printf("10k multicast: received %d of %d in %d ms; device counters %s%n", received.get(), n,
                elapsedMs, delta.asMap());
        assertEquals(0, disorder.get(), "datagrams out of order or duplicated");
        assertEquals(0, corrupt.get(), "datagrams with wrong content");
        assertEquals(n, delta.get(PortCounters.RECEIVED_PACKETS), "every datagram reached the port");
        // Loss is allowed only as counted: what did not reach us is what the device dropped for want of a receive.
        assertEquals(n, received.get() + delta.undelivered(), "received + dropped-by-device");
        subscription.dispose();
        s.dispose();
        s.onDispose().block(T);
        await("the join to be left", T, () -> SharedGroup.activeJoins() == joinsBefore);
        awaitResources(baseline, T);
    }

    @Test
    void withoutDemandTheRingEmptiesAndTheDeviceDropsCountably() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(8);
        MulticastOptions options = OPTIONS.toBuilder().receiveBuffers(8).build();
        MulticastMembership m = RdmaMulticast.join(group, options).block(T);
        UdQueue queue = ((SharedGroup.Membership) m).queue();
        MulticastSender s = RdmaMulticast.sender(group, options).block(T);
        assertEquals(8, queue.postedReceives());
        PortCounters before = PortCounters.read(m.deviceName(), m.portNumber());

        StepVerifier.create(m.datagrams().map(MulticastTestSupport::seq), 0)
                .expectSubscription()
                .then(() -> {
                    // No demand: 8 receives are posted, 30 datagrams arrive, 22 are dropped by the device.
                    s.send(Flux.range(0, 30).map(i -> payload(i, 16))).block(T);
                    try {
                        await("30 packets at the port", T, () -> PortCounters.read(m.deviceName(), m.portNumber())
                                .minus(before).get(PortCounters.RECEIVED_PACKETS) >= 30);
                        await("the ring to be used up", T, () -> queue.postedReceives() == 0);
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    PortCounters delta = PortCounters.read(m.deviceName(), m.portNumber()).minus(before);
                    assertEquals(30, delta.get(PortCounters.RECEIVED_PACKETS));
                    assertEquals(8, delta.get(PortCounters.DELIVERED));
                    assertEquals(22, delta.undelivered());
                })
                .thenRequest(8)
                .expectNext(0, 1, 2, 3, 4, 5, 6, 7)
                .then(() -> {
                    // Consumed: the credits come back and the ring is posted again.
                    try {
                        await("receives to be reposted", T, () -> queue.postedReceives() == 8);
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    s.send(Flux.range(30, 5).map(i -> payload(i, 16))).block(T);
                })
                .thenRequest(5)
                .expectNext(30, 31, 32, 33, 34)
                .thenCancel()
                .verify(T);
        m.dispose();
        s.dispose();
        m.onDispose().then(s.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void creditsComeBackFromCancelledAndDisposedSubscribers() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(11);
        MulticastOptions options = OPTIONS.toBuilder().receiveBuffers(8).build();
        MulticastMembership reader = RdmaMulticast.join(group, options).block(T);
        MulticastMembership stalled = RdmaMulticast.join(group, options).block(T);
        MulticastMembership idle = RdmaMulticast.join(group, options).block(T);
        UdQueue queue = ((SharedGroup.Membership) reader).queue();
        MulticastSender s = RdmaMulticast.sender(group, options).block(T);
        Flux<Integer> read = reader.datagrams().map(MulticastTestSupport::seq).cache();
        read.subscribe();

        StepVerifier.create(stalled.datagrams(), 0)
                .expectSubscription()
                .then(() -> {
                    s.send(Flux.range(0, 8).map(i -> payload(i, 16))).block(T);
                    StepVerifier.create(read.take(8)).expectNextCount(8).expectComplete().verify(T);
                })
                .thenCancel()
                .verify(T);
        // One subscriber read all 8, one cancelled holding them (discarded), one never subscribed (still
        // holds them): a datagram's receive is reposted only when every member is done with it.
        Thread.sleep(300);
        assertEquals(0, queue.postedReceives(), "the idle membership still holds the credits");
        idle.dispose();
        await("the ring to be posted again", T, () -> queue.postedReceives() == 8);
        s.send(Flux.range(8, 3).map(i -> payload(i, 16))).block(T);
        StepVerifier.create(read.skip(8).take(3)).expectNext(8, 9, 10).expectComplete().verify(T);
        reader.dispose();
        stalled.dispose();
        s.dispose();
        reader.onDispose().then(stalled.onDispose()).then(idle.onDispose()).then(s.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    /**
     * {@code send(Publisher)} runs as one stream that reuses a few send buffers (no {@code Mono} per datagram):
     * it must keep the order and content over many more datagrams than buffers, stop its source on the first
     * datagram it cannot send, and leave the sender usable after a cancel.
     */
    @Test
    void oneStreamOfDatagramsThroughFewSendBuffers() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(12);
        MulticastOptions options = OPTIONS.toBuilder().receiveBuffers(512).sendBuffers(4).build();
        MulticastMembership m = RdmaMulticast.join(group, options).block(T);
        Flux<Datagram> received = m.datagrams().cache();
        received.subscribe();
        MulticastSender s = RdmaMulticast.sender(group, options).block(T);

        // 300 datagrams through 4 buffers; fewer than the receive ring holds, so UD has no reason to drop any.
        s.send(Flux.range(0, 300).map(i -> payload(i, 64))).block(T);
        StepVerifier.create(received.take(300).index())
                .thenConsumeWhile(t -> t.getT1() == seq(t.getT2()) && isPayload(t.getT2(), (int) (long) t.getT1(), 64))
                .expectComplete().verify(T);

        // A datagram above the MTU ends the stream with the typed refusal and cancels the source.
        java.util.concurrent.atomic.AtomicBoolean sourceCancelled = new java.util.concurrent.atomic.AtomicBoolean();
        int tooLarge = s.maxDatagramSize() + 1;
        StepVerifier.create(s.send(Flux.range(300, 100).map(i -> i == 305 ? ByteBuffer.allocate(tooLarge)
                        : payload(i, 64)).doOnCancel(() -> sourceCancelled.set(true))))
                .expectErrorMatches(e -> e instanceof IllegalArgumentException && e.getMessage().contains("exceeds"))
                .verify(T);
        await("the source to be cancelled", T, sourceCancelled::get);
        StepVerifier.create(received.skip(300).take(5).map(MulticastTestSupport::seq))
                .expectNext(300, 301, 302, 303, 304).expectComplete().verify(T);

        // A subscriber that cancels an endless stream: the source stops, and the sender still sends.
        AtomicInteger generated = new AtomicInteger();
        Disposable endless = s.send(Flux.<ByteBuffer>generate(sink -> sink.next(payload(1000 + generated.getAndIncrement(), 64))))
                .subscribe();
        await("the endless stream to send", T, () -> generated.get() > 20);
        endless.dispose();
        int stopped = generated.get();
        Thread.sleep(200);
        assertTrue(generated.get() <= stopped + 4, "the source was asked for more after the cancel: " + generated.get());
        s.send(Flux.just(payload(5000, 64))).block(T);
        StepVerifier.create(received.skip(305).map(MulticastTestSupport::seq).filter(q -> q == 5000).take(1))
                .expectNext(5000).expectComplete().verify(T);

        // A stream whose source never emits ends when the sender is disposed, rather than waiting forever.
        reactor.core.publisher.Mono<Void> idle = s.send(Flux.<ByteBuffer>never()).cache();
        idle.subscribe(null, e -> { });
        m.dispose();
        s.dispose();
        StepVerifier.create(idle).expectError(IllegalStateException.class).verify(T);
        StepVerifier.create(s.send(Flux.just(payload(9, 8)))).expectError(IllegalStateException.class).verify(T);
        m.onDispose().then(s.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void datagramsUpToTheMtuAndNoLarger() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        InetAddress group = group(9);
        int mtu;
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device())) {
            mtu = ctx.queryPort(1).activeMtu().bytes();
        }
        MulticastMembership m = RdmaMulticast.join(group, OPTIONS).block(T);
        MulticastSender s = RdmaMulticast.sender(group, OPTIONS).block(T);
        assertEquals(mtu, s.maxDatagramSize());
        assertEquals(mtu, m.maxDatagramSize());

        PortCounters before = PortCounters.read(m.deviceName(), m.portNumber());
        StepVerifier.create(s.send(ByteBuffer.allocate(mtu + 1)))
                .expectErrorMatches(e -> e instanceof IllegalArgumentException && e.getMessage().contains("exceeds"))
                .verify(T);
        assertEquals(0, PortCounters.read(m.deviceName(), m.portNumber()).minus(before).get("rdma_sends"),
                "nothing was posted for the oversized datagram");

        s.send(payload(7, mtu)).block(T);
        StepVerifier.create(m.datagrams().take(1))
                .expectNextMatches(d -> d.length() == mtu && isPayload(d, 7, mtu))
                .expectComplete().verify(T);
        m.dispose();
        s.dispose();
        StepVerifier.create(s.send(payload(8, 8))).expectError(IllegalStateException.class).verify(T);
        m.onDispose().then(s.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void nonMulticastAddressIsRejected() throws Exception {
        StepVerifier.create(RdmaMulticast.joinMulticast(LOCAL, OPTIONS))
                .expectError(IllegalArgumentException.class).verify(T);
        StepVerifier.create(RdmaMulticast.sender(LOCAL, OPTIONS))
                .expectError(IllegalArgumentException.class).verify(T);
    }

    @Test
    void multicastErrorEventIsTyped() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        // The public API refuses unicast "groups" up front; underneath, the kernel answers a join to one
        // with MULTICAST_ERROR, which is how this test gets a real one.
        StepVerifier.create(SharedGroup.acquire(LOCAL, OPTIONS))
                .expectErrorSatisfies(e -> {
                    assertTrue(e instanceof RdmaMulticastException.JoinError, e.toString());
                    assertEquals(rdmaflux.verbs.CmEventType.MULTICAST_ERROR, ((RdmaMulticastException) e).event());
                })
                .verify(T);
        // A full-member sender gets the same. (A send-only join is not checked by this kernel at all: it
        // succeeds even for a unicast address, since RoCE send-only joins skip the IGMP step.)
        StepVerifier.create(GroupSender.create(LOCAL, OPTIONS.toBuilder().sendOnly(false).build()))
                .expectError(RdmaMulticastException.JoinError.class).verify(T);
        awaitResources(baseline, T);
    }

    @Test
    void joinTimeoutIsTypedAndFreesEverything() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        int joinsBefore = SharedGroup.activeJoins();
        InetAddress group = group(10);
        MulticastOptions hurried = OPTIONS.toBuilder().joinTimeout(Duration.ofNanos(1)).build();
        StepVerifier.create(RdmaMulticast.joinMulticast(group, hurried))
                .expectErrorSatisfies(e -> {
                    assertTrue(e instanceof RdmaMulticastException.JoinTimeout, e.toString());
                    assertEquals(group, ((RdmaMulticastException) e).group());
                })
                .verify(T);
        StepVerifier.create(RdmaMulticast.sender(group, hurried))
                .expectError(RdmaMulticastException.JoinTimeout.class).verify(T);
        await("the failed join to be dropped", T, () -> SharedGroup.activeJoins() == joinsBefore);
        awaitResources(baseline, T);
        // The failure is not sticky: the next subscriber joins afresh.
        MulticastMembership m = RdmaMulticast.join(group, OPTIONS).block(T);
        m.dispose();
        m.onDispose().block(T);
        awaitResources(baseline, T);
    }
}
