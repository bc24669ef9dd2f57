package rdmaflux.cm;

import java.time.Duration;
import java.util.Objects;

import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import rdmaflux.verbs.AsyncEvent;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;

/**
 * The asynchronous events of an RDMA device ({@code ibv_get_async_event}) as a {@link Flux}: port
 * active/down, GID table and LID/PKey changes, device fatal, and QP/CQ/SRQ error and limit events.
 *
 * <p>Each subscription opens its own device context and polls its event file descriptor on a daemon
 * thread of its own (named {@code rdmaflux-device-events-<device>}); subscribers' {@code onNext} runs on
 * that thread, so do not block in it. Every event is acknowledged as soon as it is copied. Cancelling
 * stops the thread and closes the context within {@value #POLL_MILLIS} ms.
 *
 * <p>The kernel sends port and device events to every open context of the device, so these are seen
 * here for the whole device. QP, CQ and SRQ events go only to the context that owns the object: for
 * the connections of this library that is librdmacm's context, which this stream does not see.
 */
public final class RdmaDeviceEvents {
    /** How often the polling thread checks for cancellation. */
    static final long POLL_MILLIS = 200;
    private static final Duration POLL = Duration.ofMillis(POLL_MILLIS);

    private RdmaDeviceEvents() {
    }

    /**
     * The device's asynchronous events, from subscription on. Fails with the typed
     * {@link rdmaflux.verbs.RdmaException} when the device cannot be opened or its events cannot be read.
     *
     * @param device the device name, e.g. {@code rxe0}
     * @return a cold stream: each subscriber opens the device and gets the events from then on
     */
    public static Flux<AsyncEvent> events(String device) {
        Objects.requireNonNull(device, "device");
        return Flux.create(sink -> start(device, sink), FluxSink.OverflowStrategy.BUFFER);
    }

    private static void start(String device, FluxSink<AsyncEvent> sink) {
        RdmaContext ctx;
        try {
            ctx = Rdma.open(device);
        } catch (RuntimeException e) {
            sink.error(e);
            return;
        }
        Thread poller = Thread.ofPlatform().daemon().name("rdmaflux-device-events-" + device).unstarted(() -> {
            // The context belongs to this thread: it is closed here, never while a poll uses it.
            try (ctx) {
                while (!sink.isCancelled()) {
                    AsyncEvent e = ctx.awaitAsyncEvent(POLL);
                    if (e != null) {
                        sink.next(e);
                    }
                }
            } catch (RuntimeException e) {
                sink.error(e);
            }
        });
        poller.start();
    }
}
