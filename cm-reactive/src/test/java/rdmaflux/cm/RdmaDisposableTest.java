package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** The shared {@code disposeNow}: starts the close and waits for {@code onDispose}, within the timeout. */
class RdmaDisposableTest {

    /** A handle whose close finishes on another thread some time after dispose(), as the real ones do. */
    private static final class SlowHandle implements RdmaDisposable {
        final Sinks.Empty<Void> closed = Sinks.empty();
        final AtomicBoolean disposed = new AtomicBoolean();
        final Duration closeTakes;

        SlowHandle(Duration closeTakes) {
            this.closeTakes = closeTakes;
        }

        @Override
        public void dispose() {
            if (disposed.compareAndSet(false, true)) {
                Mono.delay(closeTakes).subscribe(x -> closed.tryEmitEmpty());
            }
        }

        @Override
        public boolean isDisposed() {
            return disposed.get();
        }

        @Override
        public Mono<Void> onDispose() {
            return closed.asMono();
        }
    }

    @Test
    void disposeNowDisposesAndWaitsForTheClose() {
        SlowHandle h = new SlowHandle(Duration.ofMillis(100));
        long start = System.nanoTime();
        h.disposeNow(Duration.ofSeconds(10));
        assertTrue(h.isDisposed());
        assertTrue(System.nanoTime() - start >= Duration.ofMillis(100).toNanos(), "returned before the close finished");
        assertTrue(h.closed.scan(reactor.core.Scannable.Attr.TERMINATED), "onDispose completed");
    }

    @Test
    void disposeNowGivesUpAfterTheTimeout() {
        SlowHandle h = new SlowHandle(Duration.ofSeconds(30));
        assertThrows(IllegalStateException.class, () -> h.disposeNow(Duration.ofMillis(50)));
        assertTrue(h.isDisposed());
    }
}
