package rdmaflux.cm.internal.util;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * Makes sure a resource a {@link Mono} emits ends up owned by someone: the subscriber that received it,
 * or else the release function.
 *
 * <p>{@code doOnDiscard} alone leaves a window. A subscriber that cancels from another thread while the
 * value is on its way (after the source committed to emitting it, before the subscriber's
 * {@code onNext} ran) drops the value through {@code Hooks.onNextDropped}, which no discard hook sees:
 * {@code LambdaMonoSubscriber} does exactly that when {@code Disposable.dispose()} races its
 * {@code onNext}. Nothing would close that connection, and its peer would keep its side too.
 *
 * <p>Two more windows of the same kind:
 * <ul>
 * <li>{@code Mono.create}'s sink drops a value, to {@code Hooks.onNextDropped} again, when a cancel has
 * begun but not finished ({@code MonoSink.success} racing {@code cancel()}), and {@code Mono.publishOn}
 * forgets the value it holds when cancelled (reactor-core#4396). So the source hands its value over with
 * {@link #success}, and the guard keeps it until it reaches the guard: a cancel before that releases
 * it.</li>
 * <li>{@code dispose()} marks the subscriber cancelled and sends the cancel upstream after: a value that
 * arrives in between is dropped, its delivery and completion return, and only then does the cancel
 * arrive. A subscriber that reports itself cancelled ({@link Scannable.Attr#CANCELLED}) once the delivery
 * returned is done with its subscription, whether it took the value or dropped it; as
 * {@code LambdaMonoSubscriber} sends no cancel after it took a value, a cancel that still arrives from
 * another thread is the one that made it drop the value. An operator that keeps its subscription after
 * the value ({@code flatMap}, {@code delayUntil}: they report themselves not cancelled) may cancel it
 * much later; that releases nothing, as the operator has the value.</li>
 * </ul>
 *
 * <p>The rule, one hand-off per subscription: a cancel that arrives before the value, or while it is
 * being delivered on another thread, releases the value, once; so does one from another thread after
 * the delivery, if the subscriber reported itself cancelled when the delivery returned. A cancel from
 * inside the delivery on the same thread (operators such as {@code next()} or {@code take(1)} cancel
 * their source before passing the value on), or after a subscriber that is not cancelled took the
 * value, does not, as the subscriber has it. A subscriber that cancels from another thread and still
 * keeps the value gets a released one: it asked for nothing.
 *
 * <p>Threads: any; the state is one atomic reference.
 */
public final class Handoff<T> {
    private static final Object CANCELLED = new Object();
    private static final Object DONE = new Object();
    /** The context key under which a subscription's hand-off is found by {@link #success}. */
    private static final Object KEY = new Object();

    /** A value on {@code thread}: being delivered, or delivered to a subscriber that may have dropped it. */
    private sealed interface Held permits Delivering, Dropped {
        Object value();

        Thread thread();
    }

    /** Delivery in progress on {@code thread}. */
    private record Delivering(Object value, Thread thread) implements Held {
    }

    /**
     * Delivered on {@code thread} to a subscriber that reported itself cancelled: a cancel from another
     * thread is one it sent before the value arrived.
     */
    private record Dropped(Object value, Thread thread) implements Held {
    }

    /**
     * Emitted by the sink, not yet at the guard: an operator between them holds it ({@code publishOn},
     * whose Mono version forgets its value when cancelled without discarding it, reactor-core#4396).
     */
    private record InTransit(Object value) {
    }

    private final Consumer<? super T> release;
    /**
     * {@code null} (nothing yet), {@link #CANCELLED}, {@link InTransit}, a {@link Held} value or
     * {@link #DONE}.
     */
    private final AtomicReference<Object> state = new AtomicReference<>();
    /** The subscriber downstream of the guard; set when it subscribes, before any signal. */
    private volatile CoreSubscriber<?> downstream;

    private Handoff(Consumer<? super T> release) {
        this.release = release;
    }

    /**
     * Guards every subscription to {@code source}, whose sink hands its value over with {@link #success}.
     *
     * @param source a Mono emitting a resource its subscriber must own
     * @param type the resource's type
     * @param release frees a resource nobody received
     * @param <T> the resource type
     * @return the guarded Mono
     */
    public static <T> Mono<T> guard(Mono<T> source, Class<T> type, Consumer<? super T> release) {
        return Mono.defer(() -> {
            Handoff<T> h = new Handoff<>(release);
            return source
                    .doOnDiscard(type, h::discarded)
                    .contextWrite(Context.of(KEY, h))
                    .doOnNext(h::delivering)
                    .doOnCancel(h::cancelled)
                    .doAfterTerminate(h::delivered)
                    .transform(Operators.<T, T>lift((parent, actual) -> {
                        h.downstream = actual;
                        return actual;
                    }));
        });
    }

    /**
     * Emits a guarded resource: {@code sink.success(value)}, then releases it if the sink dropped it
     * because a cancel raced it, or keeps it, for a cancel to release, while an operator between the sink
     * and the guard holds it. A sink outside any guard just emits.
     *
     * @param sink the sink of a source given to {@link #guard} (or any other)
     * @param value the resource
     * @param <T> the resource type
     */
    @SuppressWarnings("unchecked")
    public static <T> void success(MonoSink<T> sink, T value) {
        sink.success(value);
        Handoff<T> h = sink.contextView().getOrDefault(KEY, null);
        if (h != null) {
            h.offered(value);
        }
    }

    /**
     * The sink returned from emitting {@code value}. A value that reached the guard moved the state on, to
     * a {@link Held} value or DONE. CANCELLED means the sink dropped it, or an operator between sink and
     * guard forgot it when cancelled; one the sink held back for a later request is released by the
     * cancel's discard, once. Still nothing means an operator between them holds it.
     */
    private void offered(T value) {
        while (true) {
            Object s = state.get();
            if (s == CANCELLED) {
                if (releaseFrom(s, value)) {
                    return;
                }
            } else if (s == null) {
                if (state.compareAndSet(null, new InTransit(value))) {
                    return;
                }
            } else {
                return;
            }
        }
    }

    /** An operator above the guard discarded the value: nobody has it. */
    private void discarded(T value) {
        while (true) {
            Object s = state.get();
            if (s == null || s == CANCELLED || s instanceof InTransit) {
                if (releaseFrom(s, value)) {
                    return;
                }
            } else {
                return;
            }
        }
    }

    private void delivering(T value) {
        while (true) {
            Object s = state.get();
            if (s == null || s instanceof InTransit) {
                if (state.compareAndSet(s, new Delivering(value, Thread.currentThread()))) {
                    return;
                }
            } else if (s == CANCELLED) {
                if (releaseFrom(s, value)) { // the subscriber cancelled first: it drops what comes now
                    return;
                }
            } else {
                return; // released by a cancel already
            }
        }
    }

    private void delivered() {
        while (true) {
            Object s = state.get();
            if (s instanceof Delivering d && downstreamCancelled()) {
                if (state.compareAndSet(s, new Dropped(d.value(), d.thread()))) {
                    return;
                }
            } else if (s == null || s instanceof Delivering) {
                if (state.compareAndSet(s, DONE)) {
                    return;
                }
            } else {
                return; // cancelled, or released by a cancel meanwhile
            }
        }
    }

    /** {@return whether this call moved the state from {@code s} to DONE, and so released {@code value}} */
    private boolean releaseFrom(Object s, T value) {
        if (state.compareAndSet(s, DONE)) {
            release.accept(value);
            return true;
        }
        return false;
    }

    private boolean downstreamCancelled() {
        return Scannable.from(downstream).scanOrDefault(Scannable.Attr.CANCELLED, false);
    }

    @SuppressWarnings("unchecked")
    private void cancelled() {
        while (true) {
            Object s = state.get();
            if (s == null) {
                if (state.compareAndSet(null, CANCELLED)) {
                    return;
                }
            } else if (s instanceof InTransit t) {
                if (releaseFrom(s, (T) t.value())) { // it will not reach the subscriber, which cancelled
                    return;
                }
            } else if (s instanceof Held h && h.thread() != Thread.currentThread()) {
                if (releaseFrom(s, (T) h.value())) {
                    return;
                } // else the delivery ended meanwhile: look again
            } else {
                return; // cancelled already, delivered, or a re-entrant cancel from inside the delivery
            }
        }
    }
}
