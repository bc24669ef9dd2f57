package rdmaflux.cm;

import java.lang.System.Logger.Level;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;

import rdmaflux.verbs.Poller;

/**
 * A dedicated thread that waits on file descriptors with a {@link Poller} and runs tasks handed to it.
 * Subclasses say which descriptors to watch and what to do when they are readable. All state a loop
 * owns is touched only on its thread, so it needs no locks.
 */
abstract class EventLoop implements Executor {
    static final System.Logger LOG = System.getLogger("rdmaflux.cm");

    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Poller poller = new Poller();
    private final Thread thread;
    private volatile boolean running = true;

    EventLoop(String name) {
        this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    }

    final void start() {
        thread.start();
    }

    /** @return whether the caller is this loop's thread */
    final boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Runs {@code task} on the loop thread, after the tasks queued before it. */
    @Override
    public final void execute(Runnable task) {
        tasks.add(task);
        if (!inLoop()) {
            poller.wakeup();
        }
    }

    /** @return the descriptors to wait on now */
    abstract int[] fds();

    /**
     * Called with the readiness of {@link #fds()} after each wait.
     *
     * @param ready readiness per descriptor
     */
    abstract void onReady(boolean[] ready);

    /** @return how long the next wait may last: -1 forever, 0 to only check (busy polling) */
    int waitMillis() {
        return -1;
    }

    private void run() {
        boolean[] ready = new boolean[0];
        while (running) {
            Runnable t;
            while ((t = tasks.poll()) != null) {
                try {
                    t.run();
                } catch (Throwable e) {
                    LOG.log(Level.ERROR, "task failed on " + thread.getName(), e);
                }
            }
            int[] fds = fds();
            if (ready.length < fds.length) {
                ready = new boolean[fds.length * 2];
            }
            try {
                poller.await(fds, ready, tasks.isEmpty() ? waitMillis() : 0);
                onReady(ready);
            } catch (Throwable e) {
                // A loop that dies strands every connection on it; log and keep going.
                LOG.log(Level.ERROR, "event loop " + thread.getName() + " failed an iteration", e);
            }
        }
    }
}
