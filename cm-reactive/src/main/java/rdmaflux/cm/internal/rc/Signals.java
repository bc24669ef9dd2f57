package rdmaflux.cm.internal.rc;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * Tells a connection's subscribers that their operations ended ({@link Operation.Sink}), on the connection's
 * scheduler, in batches and in the order they ended: one scheduler task per batch, however many operations
 * ended meanwhile, and no allocation per operation (the sinks link themselves).
 *
 * <p>Threads: {@link #add} from any thread (mostly the completion loop, under the send queue's lock);
 * {@link #run} on the scheduler, one batch at a time.
 */
public final class Signals implements Runnable {
    private final Supplier<Scheduler> scheduler;
    /** Ended sinks, newest first, linked through {@link Operation.Sink#next}. */
    private final AtomicReference<Operation.Sink<?>> ended = new AtomicReference<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    /** @param scheduler the scheduler to signal on, looked up at each batch (it may be replaced) */
    public Signals(Supplier<Scheduler> scheduler) {
        this.scheduler = scheduler;
    }

    /** Any thread: {@code sink} ended; its subscriber is told in the next batch. */
    void add(Operation.Sink<?> sink) {
        Operation.Sink<?> head;
        do {
            head = ended.get();
            sink.next = head;
        } while (!ended.compareAndSet(head, sink));
        if (scheduled.compareAndSet(false, true)) {
            try {
                scheduler.get().schedule(this);
            } catch (RejectedExecutionException e) {
                run(); // the scheduler is gone: signal here rather than never
            }
        }
    }

    /** On the scheduler: tells every sink that ended since the last batch, oldest first. */
    @Override
    public void run() {
        scheduled.set(false);
        Operation.Sink<?> newestFirst = ended.getAndSet(null);
        Operation.Sink<?> oldestFirst = null;
        while (newestFirst != null) {
            Operation.Sink<?> next = newestFirst.next;
            newestFirst.next = oldestFirst;
            oldestFirst = newestFirst;
            newestFirst = next;
        }
        while (oldestFirst != null) {
            Operation.Sink<?> next = oldestFirst.next;
            oldestFirst.next = null;
            try {
                oldestFirst.signal();
            } catch (RuntimeException e) { // a subscriber that throws must not keep the others waiting
                Operators.onErrorDropped(e, Context.empty());
            }
            oldestFirst = next;
        }
    }
}
