package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.MulticastMembership;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.RdmaMulticast;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.UdParameters;
import rdmaflux.verbs.WorkCompletions;

/**
 * Multicast datagram rate, the way rdma-core's {@code mckey} moves datagrams, so the two can be compared:
 * a receiver joins the group with one receive posted per datagram to come, a sender joins send-only and
 * posts all datagrams back to back; the rate is what the receiver got divided by the time from the
 * sender's first post to the receiver's last completion.
 *
 * <ul>
 *   <li>{@link #verbs}: on the verbs layer, exactly mckey's data path: UD QPs made by {@code rdma_create_qp},
 *       one registered buffer per side, the receives all posted before the join, SEND_WITH_IMM (the sender's
 *       QP number as immediate, as mckey) with no completion requested, one request per post, a receiver
 *       thread that spins on its CQ. Receiver on CPU 1, the calling (sending) thread on CPU 0 when pinned.</li>
 *   <li>{@link #reactive}: the same transfer through {@link RdmaMulticast}: a {@link MulticastMembership}
 *       whose subscriber counts datagrams, a {@link MulticastSender} sending a {@link Flux} of buffers.
 *       Everything the API does per datagram is inside the time (copy into a registered buffer, a signaled
 *       send and its completion, the copy out of the receive buffer, the hops to the scheduler).</li>
 * </ul>
 * Both record the process's CPU time ({@link CpuTime}) from the sender's first post to the last datagram
 * received, when all arrive.
 */
final class MulticastRate {
    /** Bytes of the global routing header in front of every UD receive. */
    static final int GRH_BYTES = 40;
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private MulticastRate() {
    }

    /**
     * One transfer.
     *
     * @param datagramsPerSecond received datagrams / (first post .. last datagram received), NaN if none arrived
     * @param sent datagrams posted
     * @param received datagrams the receiver got
     * @param allocatedBytes heap bytes allocated while timed: the two threads (verbs) or all threads (reactive)
     */
    record Run(double datagramsPerSecond, int sent, long received, long allocatedBytes) {
        double allocPerDatagram() {
            return (double) allocatedBytes / sent;
        }

        long lost() {
            return sent - received;
        }
    }

    /**
     * The verbs-layer transfer (see the class comment).
     *
     * @param local the RDMA interface's address
     * @param group the multicast group
     * @param count datagrams to send
     * @param size bytes per datagram, at most the port's active MTU
     * @param timeout the longest wait for a connection manager event, and for the transfer
     * @param pin run the receiver thread on CPU 1 (the caller pins itself to CPU 0)
     * @param pause runs between the joins and the first send, as mckey sleeps there (the bench waits for
     *              the JIT compilers to go idle)
     */
    static Run verbs(InetAddress local, InetAddress group, int count, int size, Duration timeout,
                     boolean pin, Runnable pause) {
        try (Arena arena = Arena.ofShared(); EventChannel channel = EventChannel.create()) {
            // Receiver: all its receives posted before the join, into one buffer (mckey does the same).
            CmId rid = channel.createId(PortSpace.UDP);
            RdmaContext rctx = resolve(channel, rid, local, group, timeout);
            ProtectionDomain rpd = rctx.allocateProtectionDomain();
            CompletionQueue rcq = rctx.createCompletionQueue(count + 1, null, 0);
            QueuePair rqp = rid.createQueuePair(rpd, QpInitAttributes.builder(QpType.UD).completionQueue(rcq)
                    .depth(1, count).sge(1, 1).build());
            MemoryRegion rmr = rpd.register(arena.allocate(size + GRH_BYTES, 64));
            ReceiveRequests recv = new ReceiveRequests(1, 1);
            recv.set(0, 0).sge(0, 0, rmr, 0, size + GRH_BYTES);
            for (int i = 0; i < count; i++) {
                rqp.postReceive(recv, 1);
            }
            rid.joinMulticast(group, false);
            expect(channel, rid, CmEventType.MULTICAST_JOIN, timeout);

            // Sender: a send-only member, as mckey -o; its QP is not attached, so it receives nothing.
            CmId sid = channel.createId(PortSpace.UDP);
            RdmaContext sctx = resolve(channel, sid, local, group, timeout);
            ProtectionDomain spd = sctx.allocateProtectionDomain();
            CompletionQueue scq = sctx.createCompletionQueue(2, null, 0);
            QueuePair sqp = sid.createQueuePair(spd, QpInitAttributes.builder(QpType.UD).completionQueue(scq)
                    .depth(count, 1).sge(1, 1).signalAll(false).build());
            MemorySegment payload = arena.allocate(Math.max(1, size), 64);
            MemoryRegion smr = spd.register(payload);
            sid.joinMulticast(group, true);
            UdParameters p = expect(channel, sid, CmEventType.MULTICAST_JOIN, timeout).datagram();
            AddressHandle ah = spd.createAddressHandle(p.addressHandle());
            SendRequests send = new SendRequests(1, 1);
            send.set(0, 0, SendOpcode.SEND_WITH_IMM, 0).immediate(0, sqp.number()).ud(0, ah, p.qpNumber(), p.qkey());
            if (size > 0) {
                send.sge(0, 0, smr, 0, size);
            }
            try {
                pause.run();
                return transfer(rcq, sqp, send, count, timeout, pin);
            } finally {
                leave(rid, group);
                leave(sid, group);
                rid.close();
                sid.close();
            }
        }
    }

    private static Run transfer(CompletionQueue rcq, QueuePair sqp, SendRequests send, int count,
                                Duration timeout, boolean pin) {
        CountDownLatch polling = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] got = new long[1];
        long[] last = new long[1];
        long[] receiverAlloc = new long[1];
        AtomicLong senderDone = new AtomicLong();
        long hardDeadline = System.nanoTime() + timeout.toNanos();
        long grace = Duration.ofSeconds(2).toNanos();
        THREADS.getCurrentThreadAllocatedBytes(); // initialise the bean outside the timed part
        Thread receiver = Thread.ofPlatform().name("bench-mc-receiver").start(() -> {
            try {
                if (pin) {
                    Affinity.pin(1);
                }
                WorkCompletions wc = new WorkCompletions(16);
                long a0 = THREADS.getCurrentThreadAllocatedBytes();
                polling.countDown();
                int n = 0;
                long end = 0;
                int idle = 0;
                while (n < count) {
                    int k = rcq.poll(wc);
                    if (k > 0) {
                        for (int i = 0; i < k; i++) {
                            if (!wc.isSuccess(i)) {
                                throw new IllegalStateException("receive failed: " + wc.describe(i));
                            }
                        }
                        n += k;
                        end = System.nanoTime();
                        idle = 0;
                        if (n >= count) {
                            CpuTime.stop(); // the sender started it; the last datagram is the end
                        }
                    } else if (++idle % 1024 == 0) {
                        // Only spin on: what was not received by now, after the sender's last post, was lost.
                        long now = System.nanoTime();
                        long done = senderDone.get();
                        if (done != 0 && now - Math.max(done, end) > grace || now > hardDeadline) {
                            break;
                        }
                    }
                }
                receiverAlloc[0] = THREADS.getCurrentThreadAllocatedBytes() - a0;
                got[0] = n;
                last[0] = end;
            } catch (Throwable e) {
                failure.set(e);
                polling.countDown();
            }
        });
        try {
            if (!polling.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the receiver thread did not start");
            }
            CpuTime.start();
            long a0 = THREADS.getCurrentThreadAllocatedBytes();
            long t0 = System.nanoTime();
            for (int i = 0; i < count; i++) {
                sqp.postSend(send, 1);
            }
            long senderAlloc = THREADS.getCurrentThreadAllocatedBytes() - a0;
            senderDone.set(System.nanoTime());
            receiver.join(timeout.toMillis() + grace / 1_000_000);
            if (receiver.isAlive()) {
                throw new IllegalStateException("the receiver thread did not stop");
            }
            if (failure.get() != null) {
                throw new IllegalStateException("receiver failed: " + failure.get(), failure.get());
            }
            double rate = got[0] == 0 ? Double.NaN : got[0] * 1e9 / (last[0] - t0);
            return new Run(rate, count, got[0], senderAlloc + receiverAlloc[0]);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            receiver.interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * The same transfer through the reactive API (see the class comment): the membership keeps
     * {@code count} receives posted, the sender up to {@code count} datagrams in flight, as mckey's queues.
     *
     * @param local the RDMA interface's address
     * @param group the multicast group
     * @param count datagrams to send
     * @param size bytes per datagram
     * @param timeout the longest wait for the join, the sends and the datagrams
     * @param pause runs between the joins and the first send, as for {@link #verbs}
     */
    static Run reactive(InetAddress local, InetAddress group, int count, int size, Duration timeout,
                        Runnable pause) {
        MulticastOptions options = MulticastOptions.builder().localAddress(local).receiveBuffers(count)
                .sendBuffers(count).build();
        MulticastMembership membership = RdmaMulticast.join(group, options).block(timeout);
        MulticastSender sender = null;
        Disposable counting = null;
        try {
            AtomicLong got = new AtomicLong();
            AtomicLong last = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Object progress = new Object();
            counting = membership.datagrams().subscribe(d -> {
                last.set(System.nanoTime());
                if (got.incrementAndGet() == count) {
                    CpuTime.stop();
                    synchronized (progress) {
                        progress.notifyAll();
                    }
                }
            }, e -> {
                failure.set(e);
                synchronized (progress) {
                    progress.notifyAll();
                }
            });
            sender = RdmaMulticast.sender(group, options).block(timeout);
            ByteBuffer payload = ByteBuffer.allocateDirect(size);
            Flux<ByteBuffer> datagrams = Flux.range(0, count).map(i -> payload.duplicate());
            pause.run();
            CpuTime.start();
            long a0 = THREADS.getTotalThreadAllocatedBytes();
            long t0 = System.nanoTime();
            sender.send(datagrams).block(timeout);
            long sentAt = System.nanoTime();
            long grace = Duration.ofSeconds(2).toNanos();
            synchronized (progress) {
                while (got.get() < count && failure.get() == null) {
                    long now = System.nanoTime();
                    long quietSince = Math.max(sentAt, last.get());
                    if (now - quietSince > grace || now - t0 > timeout.toNanos()) {
                        break; // the rest was lost
                    }
                    progress.wait(Math.max(1, (quietSince + grace - now) / 1_000_000));
                }
            }
            long allocated = THREADS.getTotalThreadAllocatedBytes() - a0;
            if (failure.get() != null) {
                throw new IllegalStateException("receiving failed: " + failure.get(), failure.get());
            }
            long n = got.get();
            double rate = n == 0 ? Double.NaN : n * 1e9 / (last.get() - t0);
            return new Run(rate, count, n, allocated);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } finally {
            if (sender != null) {
                sender.dispose();
                sender.onDispose().block(timeout);
            }
            if (counting != null) {
                counting.dispose();
            }
            membership.dispose();
            membership.onDispose().block(timeout);
        }
    }

    private static RdmaContext resolve(EventChannel channel, CmId id, InetAddress local, InetAddress group,
                                       Duration timeout) {
        id.resolveAddress(new InetSocketAddress(local, 0), new InetSocketAddress(group, 0), timeout);
        expect(channel, id, CmEventType.ADDR_RESOLVED, timeout);
        return id.context();
    }

    private static CmEvent expect(EventChannel channel, CmId id, CmEventType type, Duration timeout) {
        CmEvent e = channel.awaitEvent(timeout);
        if (e == null || e.type() != type || e.id() != id) {
            throw new IllegalStateException("expected " + type + " for " + id + ", got "
                    + (e == null ? "nothing within " + timeout : e));
        }
        return e;
    }

    private static void leave(CmId id, InetAddress group) {
        try {
            id.leaveMulticast(group);
        } catch (RuntimeException e) {
            // closing the id detaches and frees everything anyway
        }
    }
}
