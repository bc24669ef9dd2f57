package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.Datagram;
import rdmaflux.cm.internal.util.Handoff;
import rdmaflux.cm.MulticastMembership;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.internal.loop.SharedLoops;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;

/**
 * A receiving multicast join shared, with a reference count, by every {@link MulticastMembership} of the
 * same group and local address in this process. The first acquirer starts the join; the last release
 * leaves the group. A failed join is removed at once, so the next acquirer tries afresh.
 */
public final class SharedGroup implements GroupJoin.Listener {
    record Key(InetAddress group, InetAddress local) {
    }

    private static final Map<Key, SharedGroup> GROUPS = new HashMap<>();

    private final Key key;
    private final GroupJoin join;
    private final CmEventLoop cm;
    private int refs; // guarded by GROUPS

    // CM loop only.
    private final List<Membership> waiting = new ArrayList<>();
    private boolean joined;
    private Throwable failure;

    private SharedGroup(Key key, MulticastOptions options, SharedLoops loops) {
        this.key = key;
        this.cm = loops.cm();
        this.join = new GroupJoin(key.group(), options, true, loops, this);
    }

    /** {@return how many joins this process holds now (tests)} */
    public static int activeJoins() {
        synchronized (GROUPS) {
            return GROUPS.size();
        }
    }

    public static Mono<MulticastMembership> acquire(InetAddress group, MulticastOptions options) {
        return Handoff.guard(SharedLoops.<MulticastMembership>create((sink, loops) -> {
            CmEventLoop cm = loops.cm();
            Key key = new Key(group, options.localAddress());
            SharedGroup g;
            boolean fresh;
            synchronized (GROUPS) {
                g = GROUPS.get(key);
                fresh = g == null;
                if (fresh) {
                    g = new SharedGroup(key, options, loops);
                    GROUPS.put(key, g);
                }
                g.refs++;
            }
            Membership m = new Membership(g, sink);
            // Only fires while the sink has not succeeded: a cancelled subscription gives its share back.
            sink.onCancel(m::dispose);
            SharedGroup shared = g;
            if (fresh) {
                cm.execute(shared.join::start);
            }
            cm.execute(() -> shared.attach(m));
        }).publishOn(options.scheduler()), MulticastMembership.class, MulticastMembership::dispose);
    }

    /** CM loop. */
    private void attach(Membership m) {
        if (m.disposed.get()) {
            return;
        }
        if (failure != null) {
            m.fail(failure);
        } else if (joined) {
            m.activate();
        } else {
            waiting.add(m);
        }
    }

    @Override
    public void joined() {
        joined = true;
        for (Membership m : waiting) {
            m.activate();
        }
        waiting.clear();
    }

    @Override
    public void failed(Throwable cause) {
        failure = cause;
        synchronized (GROUPS) {
            GROUPS.remove(key, this);
        }
        for (Membership m : waiting) {
            m.fail(cause);
        }
        waiting.clear();
    }

    /** Any thread: a membership gives its share back. */
    private void release(Membership m) {
        boolean last;
        synchronized (GROUPS) {
            last = --refs == 0;
            if (last) {
                GROUPS.remove(key, this);
            }
        }
        cm.execute(() -> {
            waiting.remove(m);
            UdQueue q = join.queue();
            if (m.inbox != null && q != null) {
                q.removeInbox(m.inbox);
            }
            if (last) {
                join.leave();
                join.onClosed().subscribe(null, e -> m.done(), m::done);
            } else {
                m.done();
            }
        });
    }

    /** The public handle: one share of the join and one subscriber slot. */
    public static final class Membership implements MulticastMembership {
        private final SharedGroup group;
        private MonoSink<MulticastMembership> sink;
        private volatile UdQueue.Inbox inbox;
        private final AtomicBoolean disposed = new AtomicBoolean();
        private final Sinks.Empty<Void> released = Sinks.empty();

        Membership(SharedGroup group, MonoSink<MulticastMembership> sink) {
            this.group = group;
            this.sink = sink;
        }

        /** CM loop: the group is joined; from now on datagrams are queued for this membership. */
        void activate() {
            inbox = group.join.queue().addInbox();
            MonoSink<MulticastMembership> s = sink;
            sink = null;
            if (s != null) {
                Handoff.success(s, this);
            }
        }

        /** CM loop. */
        void fail(Throwable cause) {
            MonoSink<MulticastMembership> s = sink;
            sink = null;
            if (s != null) {
                s.error(cause);
            }
        }

        void done() {
            released.tryEmitEmpty();
        }

        public UdQueue queue() {
            UdQueue q = group.join.queue();
            if (q == null || inbox == null) {
                throw new IllegalStateException("the membership is not active");
            }
            return q;
        }

        @Override
        public InetAddress group() {
            return group.key.group();
        }

        @Override
        public Flux<Datagram> datagrams() {
            UdQueue.Inbox in = inbox;
            if (in == null) {
                return Flux.error(new IllegalStateException("the membership is not active"));
            }
            return in.flux();
        }

        @Override
        public int maxDatagramSize() {
            return queue().maxPayload();
        }

        @Override
        public int qkey() {
            queue();
            return group.join.parameters().qkey();
        }

        @Override
        public int qpNumber() {
            return queue().qp.number();
        }

        @Override
        public String deviceName() {
            return queue().deviceName();
        }

        @Override
        public int portNumber() {
            return queue().port();
        }

        @Override
        public void dispose() {
            if (disposed.compareAndSet(false, true)) {
                group.release(this);
            }
        }

        @Override
        public boolean isDisposed() {
            return disposed.get();
        }

        @Override
        public Mono<Void> onDispose() {
            return released.asMono().publishOn(group.join.options().scheduler());
        }

        @Override
        public String toString() {
            return "MulticastMembership[" + group.key.group().getHostAddress() + (disposed.get() ? ", disposed" : "")
                    + "]";
        }
    }
}
