package rdmaflux.cm;

import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.loop.Loops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Loops of one's own: connections are spread over their completion loops, and disposing them closes the
 * connections still open and ends every thread; the shared loops can be disposed too.
 */
class LoopsIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final String PREFIX = "rdmaflux-it-loops";
    private static final int CONNECTIONS = 4;
    private static final int MESSAGES = 20;

    private static Set<String> liveThreads(String prefix) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith(prefix)).collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void connectionsSpreadOverTheCompletionLoopsAndDisposeClosesThemAndEndsEveryThread() {
        RdmaLoops loops = RdmaLoops.create(PREFIX, 2);
        assertEquals(Set.of(PREFIX + "-cm", PREFIX + "-completion-0", PREFIX + "-completion-1", PREFIX + "-signal-0",
                PREFIX + "-signal-1"), liveThreads(PREFIX));
        // The server stays on the shared loops, so the client connections alone take turns on these.
        // Signals on Schedulers.immediate() arrive on the completion loop that drained them.
        ConnectionOptions client = ConnectionOptions.defaults().toBuilder().loops(loops)
                .scheduler(Schedulers.immediate()).receiveBuffers(8).sendBuffers(8).build();
        Set<String> drainedBy = new ConcurrentSkipListSet<>();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            List<RdmaConnection> cs = Flux.range(0, CONNECTIONS)
                    .concatMap(i -> RdmaConnection.connect(echo.address(), client)).collectList().block(T);
            Flux.fromIterable(cs).flatMap(c -> {
                Mono<List<byte[]>> echoes = c.receiveBytes().take(MESSAGES).collectList();
                Mono<Void> sends = Flux.range(0, MESSAGES)
                        .concatMap(n -> c.send(Payloads.message(n, 64 + n))
                                .doOnSuccess(v -> drainedBy.add(Thread.currentThread().getName())))
                        .then();
                return Mono.zip(echoes, sends.thenReturn(true)).map(t -> t.getT1());
            }).doOnNext(list -> {
                assertEquals(MESSAGES, list.size());
                for (int n = 0; n < MESSAGES; n++) {
                    Payloads.verify(list.get(n), n, 64 + n);
                }
            }).then().block(T);
            assertEquals(Set.of(PREFIX + "-completion-0", PREFIX + "-completion-1"), drainedBy,
                    "round robin over both completion loops");
            // Two connections on each loop, one device: each loop waits on one descriptor, its channel.
            for (CompletionLoop l : ((Loops) loops).completionLoopsForTest()) {
                assertEquals(1, l.fds().length, "descriptors a completion loop waits on");
            }

            // Disposing the loops closes what still runs on them, then ends the threads.
            loops.disposeNow(T);
            for (RdmaConnection c : cs) {
                assertTrue(c.isDisposed(), c + " still open after its loops were disposed");
            }
            Thread[] threads = ((Loops) loops).threads();
            for (Thread t : threads) {
                assertFalse(t.isAlive(), t.getName() + " still alive");
            }
            assertEquals(Set.of(), liveThreads(PREFIX));
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> RdmaConnection.connect(echo.address(), client).block(T));
            assertInstanceOf(IllegalStateException.class, e instanceof IllegalStateException ? e : e.getCause());
        }
    }

    /**
     * A process that accepts and connects: the server's side of each connection is set up on the servers' CM
     * loop and the client's on the other, two threads as cmtime's two processes, and both end with the loops.
     */
    @Test
    void aServerSetsUpItsConnectionsOnItsOwnCmLoopAndDisposeEndsIt() {
        String prefix = PREFIX + "-accept";
        RdmaLoops loops = RdmaLoops.create(prefix, 1);
        // No server yet: no thread for one.
        assertEquals(Set.of(prefix + "-cm", prefix + "-completion-0", prefix + "-signal-0"), liveThreads(prefix));
        Set<String> serverEventsOn = new ConcurrentSkipListSet<>();
        Set<String> clientEventsOn = new ConcurrentSkipListSet<>();
        ConnectionOptions base = ConnectionOptions.defaults().toBuilder().loops(loops).build();
        ConnectionOptions server = base.toBuilder().recorder(eventThreads(serverEventsOn)).build();
        ConnectionOptions client = base.toBuilder().recorder(eventThreads(clientEventsOn)).build();
        try (EchoServer echo = new EchoServer(server)) {
            assertEquals(Set.of(prefix + "-cm", prefix + "-cm-server", prefix + "-completion-0", prefix + "-signal-0"),
                    liveThreads(prefix));
            List<RdmaConnection> cs = Flux.range(0, CONNECTIONS)
                    .flatMap(i -> RdmaConnection.connect(echo.address(), client)).collectList().block(T);
            Flux.fromIterable(cs).index().flatMap(t -> {
                int n = t.getT1().intValue();
                RdmaConnection c = t.getT2();
                return c.receiveBytes().next().zipWith(c.send(Payloads.message(n, 48)).thenReturn(n));
            }).doOnNext(t -> Payloads.verify(t.getT1(), t.getT2(), 48)).then().block(T);
            // The listener's connect requests and the accepted ids' events arrive on the servers' loop.
            assertEquals(Set.of(prefix + "-cm-server"), serverEventsOn);
            assertEquals(Set.of(prefix + "-cm"), clientEventsOn);
            loops.disposeNow(T);
            for (RdmaConnection c : cs) {
                assertTrue(c.isDisposed(), c + " still open after its loops were disposed");
            }
            for (Thread t : ((Loops) loops).threads()) {
                assertFalse(t.isAlive(), t.getName() + " still alive");
            }
            assertEquals(Set.of(), liveThreads(prefix));
            // A server bound after its loops were disposed fails; no thread starts for it.
            RuntimeException e = assertThrows(RuntimeException.class, () -> RdmaServer.bind(
                    new InetSocketAddress(RdmaTestEnv.address(), 0), base, AcceptFilter.ACCEPT_ALL).block(T));
            assertInstanceOf(IllegalStateException.class, e instanceof IllegalStateException ? e : e.getCause());
            assertEquals(Set.of(), liveThreads(prefix));
        } finally {
            loops.disposeNow(T);
        }
    }

    /** {@return a recorder that notes which threads read CM events} */
    private static RdmaRecorder eventThreads(Set<String> into) {
        return new RdmaRecorder() {
            @Override
            public void cmEvent(rdmaflux.verbs.CmEventType type) {
                into.add(Thread.currentThread().getName());
            }
        };
    }

    @Test
    void aBusyPollingConnectionSpinsOnlyItsOwnLoop() {
        RdmaLoops loops = RdmaLoops.create(PREFIX + "-busy", 2);
        ConnectionOptions eventDriven = ConnectionOptions.defaults().toBuilder().loops(loops).build();
        // Spins for 5 s after each completion: long enough to measure, short enough to end with the test.
        ConnectionOptions busy = eventDriven.toBuilder().busyPoll(Duration.ofSeconds(5)).build();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            // Connected one after the other: the busy one on completion-0, the other on completion-1.
            RdmaConnection spinning = RdmaConnection.connect(echo.address(), busy).block(T);
            RdmaConnection sleeping = RdmaConnection.connect(echo.address(), eventDriven).block(T);
            for (RdmaConnection c : List.of(spinning, sleeping)) {
                Mono<byte[]> reply = c.receiveBytes().next();
                c.send(ByteBuffer.wrap(new byte[] {7})).block(T);
                assertEquals(1, reply.block(T).length);
            }
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            Thread[] threads = ((Loops) loops).threads();
            long busy0 = cpu.getThreadCpuTime(threads[1].threadId());
            long idle0 = cpu.getThreadCpuTime(threads[2].threadId());
            Resources.sleep(2000);
            long busyCpu = cpu.getThreadCpuTime(threads[1].threadId()) - busy0;
            long idleCpu = cpu.getThreadCpuTime(threads[2].threadId()) - idle0;
            System.out.printf("busy poll: %s used %d ms of CPU in 2 s, %s %d ms%n", threads[1].getName(),
                    busyCpu / 1_000_000, threads[2].getName(), idleCpu / 1_000_000);
            assertTrue(busyCpu > Duration.ofMillis(300).toNanos(), "the busy loop did not spin: " + busyCpu + " ns");
            assertTrue(idleCpu * 10 < busyCpu, "the other loop spun too: " + idleCpu + " ns vs " + busyCpu + " ns");
            spinning.disposeNow(T);
            sleeping.disposeNow(T);
            assertSpinningStops(threads[1]);
        } finally {
            loops.disposeNow(T);
        }
    }

    /**
     * Once its busy-polling connections are gone, a loop sleeps again: within 10 s (the peers' teardown is
     * asynchronous) comes a second in which it used under a fifth of a CPU.
     */
    private static void assertSpinningStops(Thread loop) {
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        long[] windows = new long[10];
        for (int w = 0; w < windows.length; w++) {
            long before = cpu.getThreadCpuTime(loop.threadId());
            Resources.sleep(1000);
            windows[w] = (cpu.getThreadCpuTime(loop.threadId()) - before) / 1_000_000;
            if (windows[w] < 200) {
                return;
            }
        }
        throw new AssertionError(loop.getName() + " kept spinning after its busy-polling connections closed: ms of CPU"
                + " per second " + java.util.Arrays.toString(windows));
    }

    @Test
    void busyPollingConnectionsShareTheLoopThatAlreadySpinsAndOthersStillTakeTurns() {
        Loops loops = (Loops) RdmaLoops.create(PREFIX + "-placement", 3);
        try {
            CompletionLoop[] all = loops.completionLoopsForTest();
            CompletionLoop first = loops.nextCompletionLoop(true);
            assertSame(all[0], first);
            assertEquals(1, first.busyPollers());
            // Event-driven ones go round robin as before, over every loop.
            assertSame(all[1], loops.nextCompletionLoop(false));
            assertSame(all[2], loops.nextCompletionLoop(false));
            // The next busy-polling ones join the first, wherever round robin stands.
            assertSame(first, loops.nextCompletionLoop(true));
            assertSame(first, loops.nextCompletionLoop(true));
            assertEquals(3, first.busyPollers());
            // Once all have left, the next one goes round robin again: after all[0], whose turn it is now.
            first.busyPollers(-3);
            assertSame(all[0], loops.nextCompletionLoop(false));
            CompletionLoop next = loops.nextCompletionLoop(true);
            assertSame(all[1], next);
            assertEquals(1, next.busyPollers());
            assertEquals(0, first.busyPollers());
        } finally {
            loops.disposeNow(T);
        }
    }

    @Test
    void busyPollingClientAndServerSpinOneLoopAndDeliverOnItWithTheImmediateScheduler() {
        // What a busy-poll user does: busy polling on both sides, signals on the loop that drained them.
        // The client's and the in-process server's connections land on one loop: one thread spins.
        RdmaLoops loops = RdmaLoops.create(PREFIX + "-spin", 2);
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().loops(loops)
                .busyPoll(Duration.ofSeconds(5)).scheduler(Schedulers.immediate()).build();
        Thread[] threads = ((Loops) loops).threads();
        Set<String> deliveredOn = new ConcurrentSkipListSet<>();
        try (EchoServer echo = new EchoServer(options)) { // its accept filter ran on Schedulers.immediate()
            RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
            List<byte[]> echoes = c.receiveBytes().doOnNext(b -> deliveredOn.add(Thread.currentThread().getName()))
                    .take(MESSAGES).collectList()
                    .zipWith(Flux.range(0, MESSAGES).concatMap(n -> c.send(Payloads.message(n, 32))).then()
                            .thenReturn(true), (l, sent) -> l)
                    .block(T);
            for (int n = 0; n < MESSAGES; n++) {
                Payloads.verify(echoes.get(n), n, 32);
            }
            assertEquals(1, deliveredOn.size(), "delivered on " + deliveredOn);
            assertTrue(deliveredOn.iterator().next().startsWith(PREFIX + "-spin-completion-"), deliveredOn.toString());
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            long a0 = cpu.getThreadCpuTime(threads[1].threadId());
            long b0 = cpu.getThreadCpuTime(threads[2].threadId());
            Resources.sleep(2000);
            long a = cpu.getThreadCpuTime(threads[1].threadId()) - a0;
            long b = cpu.getThreadCpuTime(threads[2].threadId()) - b0;
            System.out.printf("busy poll, both sides: completion-0 %d ms, completion-1 %d ms of CPU in 2 s%n",
                    a / 1_000_000, b / 1_000_000);
            long spun = Math.max(a, b);
            assertTrue(spun > Duration.ofMillis(300).toNanos(), "no loop spun: " + a + " / " + b + " ns");
            assertTrue(Math.min(a, b) * 10 < spun, "both loops spun: " + a + " / " + b + " ns");
            // Still within the 5 s of busy polling: the spinning loop, with its two real CQs, allocates nothing
            // per turn. As in the allocation probes elsewhere: one clean window out of ten proves it (the JIT
            // may allocate once in a while; a turn that allocated would in every window).
            Thread spinner = a > b ? threads[1] : threads[2];
            com.sun.management.ThreadMXBean alloc = (com.sun.management.ThreadMXBean) cpu;
            long[] bytes = new long[10];
            boolean clean = false;
            for (int w = 0; w < bytes.length && !clean; w++) {
                long before = alloc.getThreadAllocatedBytes(spinner.threadId());
                Resources.sleep(100);
                bytes[w] = alloc.getThreadAllocatedBytes(spinner.threadId()) - before;
                clean = bytes[w] == 0;
            }
            assertTrue(clean, "the spinning loop allocated in every window: " + java.util.Arrays.toString(bytes));
            c.disposeNow(T);
            assertSpinningStops(spinner);
        } finally {
            loops.disposeNow(T);
        }
    }

    /**
     * Pauses close to the busy-poll period: a busy period that ran out between the drain that skipped the
     * re-arm and the loop's decision to stop polling once left a CQ neither polled nor armed, and the next
     * message was never delivered (the benchmark's busy-poll row, about one run in five).
     */
    @Test
    void busyPollingConnectionsWakeUpAfterPausesAroundTheBusyPeriod() throws Exception {
        RdmaLoops loops = RdmaLoops.create(PREFIX + "-pause", 2);
        Duration period = Duration.ofMillis(200);
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().loops(loops).busyPoll(period)
                .scheduler(Schedulers.immediate()).build();
        try (EchoServer echo = new EchoServer(options)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
            java.util.concurrent.BlockingQueue<byte[]> echoes = new java.util.concurrent.LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(echoes::add);
            long[] pausesMs = {150, 190, 198, 200, 202, 210, 250};
            for (int n = 0; n < 70; n++) {
                c.send(Payloads.message(n, 32)).block(T);
                byte[] got = echoes.poll(10, java.util.concurrent.TimeUnit.SECONDS);
                assertTrue(got != null, "no echo of message " + n + " within 10 s");
                Payloads.verify(got, n, 32);
                Resources.sleep(pausesMs[n % pausesMs.length]);
            }
            c.disposeNow(T);
        } finally {
            loops.disposeNow(T);
        }
    }

    @Test
    void aSpinningLoopStillServesAnEventDrivenConnectionOnIt() {
        // One completion loop: the busy-polling server side keeps it spinning, and the event-driven
        // client's completions are only seen through its channel, which a spinning loop polls every
        // DESCRIPTOR_TURNS turns.
        RdmaLoops loops = RdmaLoops.create(PREFIX + "-mixed", 1);
        ConnectionOptions busy = ConnectionOptions.defaults().toBuilder().loops(loops)
                .busyPoll(Duration.ofSeconds(5)).build();
        ConnectionOptions eventDriven = ConnectionOptions.defaults().toBuilder().loops(loops).build();
        Thread loop = ((Loops) loops).threads()[1];
        try (EchoServer echo = new EchoServer(busy)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), eventDriven).block(T);
            // Enough echoes for a window of a few hundred ms: over 20 (13-16 ms), the emulated CPUs'
            // scheduling alone has left the spinning loop a quarter of the window.
            int messages = 10 * MESSAGES;
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            long cpu0 = cpu.getThreadCpuTime(loop.threadId());
            long wall0 = System.nanoTime();
            List<byte[]> echoes = c.receiveBytes().take(messages).collectList()
                    .zipWith(Flux.range(0, messages).concatMap(n -> c.send(Payloads.message(n, 48))).then()
                            .thenReturn(true), (l, sent) -> l)
                    .block(T);
            for (int n = 0; n < messages; n++) {
                Payloads.verify(echoes.get(n), n, 48);
            }
            long spun = cpu.getThreadCpuTime(loop.threadId()) - cpu0;
            long wall = System.nanoTime() - wall0;
            System.out.printf("mixed loop: %d echoes in %d ms, the loop used %d ms of CPU%n", messages,
                    wall / 1_000_000, spun / 1_000_000);
            assertTrue(spun > wall / 4, "the loop did not spin meanwhile: " + spun + " ns of CPU in " + wall + " ns");
            c.disposeNow(T);
        } finally {
            loops.disposeNow(T);
        }
    }

    @Test
    void aConnectInProgressWhenItsLoopsAreDisposedFailsInsteadOfHanging() throws Exception {
        RdmaLoops loops = RdmaLoops.create(PREFIX + "-connecting", 1);
        // Nobody has this address on the sandbox's link: address resolution waits for ARP.
        byte[] a = RdmaTestEnv.address().getAddress();
        a[3] = (byte) 0xEE;
        InetSocketAddress nobody = new InetSocketAddress(java.net.InetAddress.getByAddress(a), 7471);
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().loops(loops)
                .timeout(Step.ADDRESS, Duration.ofSeconds(30)).build();
        java.util.concurrent.CompletableFuture<RdmaConnection> pending =
                RdmaConnection.connect(nobody, options).toFuture();
        loops.disposeNow(T);
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> pending.get(10, java.util.concurrent.TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, e.getCause(), e.getCause().toString());
        assertEquals(Set.of(), liveThreads(PREFIX + "-connecting"));
    }

    @Test
    void disposingTheSharedLoopsLeavesNoRdmafluxThreadAndTheNextUseStartsNewOnes() {
        // Whatever ran before in this JVM has been closed by its test; its loops are the shared ones.
        RdmaLoops first = RdmaLoops.shared();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            c.send(ByteBuffer.wrap(new byte[] {1, 2, 3})).block(T);
            assertEquals(3, c.receiveBytes().blockFirst(T).length);
        }
        first.disposeNow(T);
        for (Thread t : ((Loops) first).threads()) {
            try {
                t.join(T.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
        // The leak detector's thread (tests run at paranoid) is no loop's: it runs while a tracked message is
        // not released, which a message an earlier test still holds can be (TrackedMessageTest shows it ends).
        Set<String> left = liveThreads("rdmaflux-");
        left.remove("rdmaflux-leak-detector");
        assertEquals(Set.of(), left);
        RdmaLoops second = RdmaLoops.shared();
        assertFalse(second == first, "a disposed shared instance must be replaced");
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            c.send(ByteBuffer.wrap(new byte[] {4})).block(T);
            assertEquals(1, c.receiveBytes().blockFirst(T).length);
            c.disposeNow(T);
        }
    }
}
