package rdmaflux.cm;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import reactor.core.publisher.Mono;

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
 * <p>The rule, one hand-off per subscription: a cancel that arrives before the value, or while it is
 * being delivered on another thread, releases the value; a cancel from inside the delivery on the same
 * thread (operators such as {@code next()} or {@code take(1)} cancel their source before passing the
 * value on) or after the subscriber completed does not, as the subscriber has it. A subscriber that
 * cancels from another thread and still keeps the value gets a released one: it asked for nothing.
 *
 * <p>Threads: any; the state is one atomic reference.
 */
final class Handoff<T> {
    private static final Object CANCELLED = new Object();
    private static final Object DONE = new Object();

    /** Delivery in progress on {@code thread}. */
    private record Delivering(Object value, Thread thread) {
    }

    private final Consumer<? super T> release;
    /** {@code null} (nothing yet), {@link #CANCELLED}, {@link Delivering} or {@link #DONE}. */
    private final AtomicReference<Object> state = new AtomicReference<>();

    private Handoff(Consumer<? super T> release) {
        this.release = release;
    }

    /**
     * Guards every subscription to {@code source}.
     *
     * @param source a Mono emitting a resource its subscriber must own
     * @param type the resource's type
     * @param release frees a resource nobody received
     * @param <T> the resource type
     * @return the guarded Mono
     */
    static <T> Mono<T> guard(Mono<T> source, Class<T> type, Consumer<? super T> release) {
        return Mono.defer(() -> {
            Handoff<T> h = new Handoff<>(release);
            return source
                    .doOnDiscard(type, release)
                    .doOnNext(h::delivering)
                    .doOnCancel(h::cancelled)
                    .doAfterTerminate(h::delivered);
        });
    }

    private void delivering(T value) {
        Object before = state.compareAndExchange(null, new Delivering(value, Thread.currentThread()));
        if (before == CANCELLED) {
            release.accept(value); // the subscriber cancelled first: it drops what comes now
        }
    }

    private void delivered() {
        state.set(DONE);
    }

    @SuppressWarnings("unchecked")
    private void cancelled() {
        while (true) {
            Object s = state.get();
            if (s == null) {
                if (state.compareAndSet(null, CANCELLED)) {
                    return;
                }
            } else if (s instanceof Delivering d && d.thread() != Thread.currentThread()) {
                if (state.compareAndSet(s, DONE)) {
                    release.accept((T) d.value());
                }
                return;
            } else {
                return; // cancelled already, delivered, or a re-entrant cancel from inside the delivery
            }
        }
    }
}
