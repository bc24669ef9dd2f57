package rdmaflux.metrics;

import java.net.InetSocketAddress;
import java.util.Objects;

import reactor.util.context.ContextView;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.WcStatus;

/**
 * A recorder that hands every call to another, for decorators that add to one or two calls. Every
 * method of {@link RdmaRecorder} is forwarded, so a decorator never hides what its delegate records;
 * the per-message calls cost one more virtual call and allocate nothing.
 *
 * <p>Threads: those of the delegate.
 */
abstract class ForwardingRecorder implements RdmaRecorder {
    final RdmaRecorder delegate;

    ForwardingRecorder(RdmaRecorder delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    @Override
    public void connectOutcome(boolean server, Outcome outcome, String cause) {
        delegate.connectOutcome(server, outcome, cause);
    }

    @Override
    public void connectOutcome(boolean server, Outcome outcome, Throwable error) {
        delegate.connectOutcome(server, outcome, error);
    }

    @Override
    public void stepDuration(Step step, long nanos) {
        delegate.stepDuration(step, nanos);
    }

    @Override
    public void activeConnections(int delta) {
        delegate.activeConnections(delta);
    }

    @Override
    public void cmEvent(CmEventType type) {
        delegate.cmEvent(type);
    }

    @Override
    public void messageSent(int bytes) {
        delegate.messageSent(bytes);
    }

    @Override
    public void messageReceived(int bytes) {
        delegate.messageReceived(bytes);
    }

    @Override
    public void operationLatency(String operation, long nanos) {
        delegate.operationLatency(operation, nanos);
    }

    @Override
    public void completionError(WcStatus status) {
        delegate.completionError(status);
    }

    @Override
    public void creditWait() {
        delegate.creditWait();
    }

    @Override
    public void pollBatch(int completions) {
        delegate.pollBatch(completions);
    }

    @Override
    public void outstanding(int delta) {
        delegate.outstanding(delta);
    }

    @Override
    public void multicastGroups(int delta) {
        delegate.multicastGroups(delta);
    }

    @Override
    public void datagramSent(int bytes) {
        delegate.datagramSent(bytes);
    }

    @Override
    public void datagramReceived(int bytes) {
        delegate.datagramReceived(bytes);
    }

    @Override
    public void datagramDropped(String reason) {
        delegate.datagramDropped(reason);
    }

    @Override
    public RdmaRecorder attempt(boolean server, InetSocketAddress peer, ContextView context) {
        return delegate.attempt(server, peer, context);
    }

    @Override
    public RdmaRecorder forPeer(InetSocketAddress peer) {
        return delegate.forPeer(peer);
    }
}
