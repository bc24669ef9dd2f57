package rdmaflux.metrics.autoconfigure;

import java.time.Duration;
import java.util.Objects;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.FactoryBean;

import rdmaflux.cm.RdmaLoops;

/**
 * The application context's {@link RdmaLoops}: created with the context, disposed when it closes, after the
 * beans that use them (Spring destroys a factory bean after its product's dependents), and waited for, so
 * that the loops' threads have ended and every connection on them is closed when {@code close()} returns.
 *
 * <p>Called by the context's thread only.
 */
final class RdmaLoopsFactoryBean implements FactoryBean<RdmaLoops>, DisposableBean {
    private final String prefix;
    private final int completionLoops;
    private final Duration shutdownTimeout;
    private RdmaLoops loops;

    RdmaLoopsFactoryBean(String prefix, int completionLoops, Duration shutdownTimeout) {
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.completionLoops = completionLoops;
        this.shutdownTimeout = Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
    }

    @Override
    public RdmaLoops getObject() {
        if (loops == null) {
            loops = RdmaLoops.create(prefix, completionLoops);
        }
        return loops;
    }

    @Override
    public Class<?> getObjectType() {
        return RdmaLoops.class;
    }

    @Override
    public void destroy() {
        RdmaLoops l = loops;
        if (l != null) {
            l.dispose();
            try {
                l.onDispose().block(shutdownTimeout);
            } catch (IllegalStateException e) {
                throw new IllegalStateException("rdmaflux loops " + prefix + " did not end within "
                        + shutdownTimeout + " (rdmaflux.loops.shutdown-timeout): a connection may not have closed", e);
            }
        }
    }
}
