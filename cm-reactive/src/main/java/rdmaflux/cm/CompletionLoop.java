package rdmaflux.cm;

import java.util.ArrayList;
import java.util.List;

import rdmaflux.verbs.CompletionChannel;
import rdmaflux.verbs.CompletionQueue;

/**
 * A completion loop: one thread that waits on the completion channels of the connections assigned to
 * it and lets each drain its CQ. While one of its connections is busy polling, this loop polls on every
 * turn without sleeping; other loops are unaffected.
 */
final class CompletionLoop extends EventLoop {
    /** A connection's side of the loop. */
    interface Handler {
        /** Drain the CQ, re-arm it and drain once more; called on the loop thread. */
        void drain();

        /** {@return whether the loop should poll this handler without waiting for its channel} */
        boolean busy();
    }

    private record Registration(CompletionChannel channel, Handler handler) {
    }

    private final List<Registration> registrations = new ArrayList<>();
    private int[] fds = new int[0];

    private final int index;

    /**
     * Creates and starts the loop.
     *
     * @param name the thread's name; the thread starts now
     * @param index this loop's number among its siblings: CQs on it use completion vector
     *              {@code index % vectors}
     */
    CompletionLoop(String name, int index) {
        super(name);
        this.index = index;
        start();
    }

    /**
     * The completion vector for CQs this loop drains.
     *
     * @param vectors the device's completion vectors
     * @return the vector for CQs drained by this loop
     */
    int completionVector(int vectors) {
        return vectors <= 0 ? 0 : index % vectors;
    }

    /** Loop thread only. */
    void register(CompletionChannel channel, Handler handler) {
        registrations.add(new Registration(channel, handler));
        rebuild();
    }

    /** Loop thread only; after it returns the loop never touches the channel again. */
    void unregister(Handler handler) {
        registrations.removeIf(r -> r.handler == handler);
        rebuild();
    }

    private void rebuild() {
        fds = new int[registrations.size()];
        for (int i = 0; i < fds.length; i++) {
            fds[i] = registrations.get(i).channel.fd();
        }
    }

    @Override
    int[] fds() {
        return fds;
    }

    @Override
    int waitMillis() {
        for (Registration r : registrations) {
            if (r.handler.busy()) {
                return 0;
            }
        }
        return -1;
    }

    @Override
    void onReady(boolean[] ready) {
        // Handlers may unregister themselves while draining: iterate over a snapshot.
        Registration[] regs = registrations.toArray(new Registration[0]);
        for (int i = 0; i < regs.length && i < fds.length; i++) {
            Registration r = regs[i];
            if (ready[i]) {
                CompletionQueue cq = r.channel.tryGetEvent();
                if (cq != null || r.handler.busy()) {
                    r.handler.drain();
                }
            } else if (r.handler.busy()) {
                r.handler.drain();
            }
        }
    }
}
