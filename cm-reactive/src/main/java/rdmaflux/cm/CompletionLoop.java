package rdmaflux.cm;

import java.util.Arrays;

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

    private static final Registration[] NONE = new Registration[0];

    /**
     * The registrations and their descriptors, in the same order; replaced (never changed in place) on
     * register/unregister, so a turn iterates what it polled without copying: no allocation per wake-up.
     */
    private Registration[] registrations = NONE;
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
        Registration[] next = Arrays.copyOf(registrations, registrations.length + 1);
        next[next.length - 1] = new Registration(channel, handler);
        install(next);
    }

    /** Loop thread only; after it returns the loop never touches the channel again. */
    void unregister(Handler handler) {
        install(Arrays.stream(registrations).filter(r -> r.handler != handler).toArray(Registration[]::new));
    }

    private void install(Registration[] next) {
        int[] nextFds = new int[next.length];
        for (int i = 0; i < next.length; i++) {
            nextFds[i] = next[i].channel.fd();
        }
        registrations = next;
        fds = nextFds;
    }

    @Override
    int[] fds() {
        return fds;
    }

    @Override
    int waitMillis() {
        Registration[] regs = registrations;
        for (int i = 0; i < regs.length; i++) {
            if (regs[i].handler.busy()) {
                return 0;
            }
        }
        return -1;
    }

    @Override
    void onReady(boolean[] ready) {
        // The array that was polled: ready[i] belongs to regs[i] even if a drain changes the registrations.
        Registration[] regs = registrations;
        for (int i = 0; i < regs.length; i++) {
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
