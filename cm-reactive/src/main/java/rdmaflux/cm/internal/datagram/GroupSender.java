package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.Handoff;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.internal.loop.SharedLoops;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.UdParameters;

/** The {@link MulticastSender} implementation: a private sending {@link GroupJoin}. */
public final class GroupSender implements MulticastSender, GroupJoin.Listener {
    private final MulticastOptions options;
    private final GroupJoin join;
    private final CmEventLoop cm;
    private final AtomicBoolean disposed = new AtomicBoolean();
    private MonoSink<MulticastSender> sink;
    private volatile AddressHandle ah;
    private volatile UdParameters params;

    private GroupSender(InetAddress group, MulticastOptions options, SharedLoops loops,
                        MonoSink<MulticastSender> sink) {
        this.options = options;
        this.cm = loops.cm();
        this.sink = sink;
        this.join = new GroupJoin(group, options, false, loops, this);
    }

    public static Mono<MulticastSender> create(InetAddress group, MulticastOptions options) {
        return Handoff.guard(SharedLoops.<MulticastSender>create((sink, loops) -> {
            GroupSender s = new GroupSender(group, options, loops, sink);
            sink.onCancel(s::dispose);
            loops.cm().execute(s.join::start);
        }).publishOn(options.scheduler()), MulticastSender.class, MulticastSender::dispose);
    }

    @Override
    public void joined() {
        try {
            params = join.parameters();
            ah = join.queue().addressHandle(params.addressHandle());
        } catch (RuntimeException e) {
            join.fail(e);
            return;
        }
        MonoSink<MulticastSender> s = sink;
        sink = null;
        if (s != null) {
            Handoff.success(s, this);
        }
    }

    @Override
    public void failed(Throwable cause) {
        MonoSink<MulticastSender> s = sink;
        sink = null;
        if (s != null) {
            s.error(cause);
        }
    }

    /** {@return the MULTICAST_JOIN parameters this sender posts with (tests)} */
    public UdParameters joinParameters() {
        return params;
    }

    @Override
    public InetAddress group() {
        return join.group();
    }

    @Override
    public boolean isSendOnly() {
        return join.sendOnly();
    }

    @Override
    public int maxDatagramSize() {
        return join.queue().maxPayload();
    }

    @Override
    public int qkey() {
        return params.qkey();
    }

    @Override
    public int qpNumber() {
        return join.queue().qp.number();
    }

    @Override
    public Mono<Void> send(ByteBuffer datagram) {
        if (disposed.get()) {
            return Mono.error(new IllegalStateException("the sender is disposed"));
        }
        UdParameters p = params;
        return join.queue().send(ah, p.qpNumber(), p.qkey(), datagram, false, 0);
    }

    @Override
    public Mono<Void> send(Publisher<? extends ByteBuffer> datagrams) {
        if (disposed.get()) {
            return Mono.error(new IllegalStateException("the sender is disposed"));
        }
        UdParameters p = params;
        return join.queue().send(ah, p.qpNumber(), p.qkey(), datagrams);
    }

    @Override
    public void dispose() {
        if (disposed.compareAndSet(false, true)) {
            UdQueue q = join.queue();
            if (q != null) {
                q.markClosed(null);
            }
            cm.execute(join::leave);
        }
    }

    @Override
    public boolean isDisposed() {
        return disposed.get();
    }

    @Override
    public Mono<Void> onDispose() {
        return join.onClosed().publishOn(options.scheduler());
    }

    @Override
    public String toString() {
        return "MulticastSender[" + join.group().getHostAddress() + (isSendOnly() ? ", send-only" : "")
                + (disposed.get() ? ", disposed" : "") + "]";
    }
}
