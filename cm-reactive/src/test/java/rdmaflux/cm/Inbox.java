package rdmaflux.cm;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Test fixture: what a {@code receiveBytes().subscribe(inbox::add, inbox::add)} subscription collected,
 * taken one message at a time; a failure of {@code receive()} is rethrown as the test's failure.
 */
final class Inbox {
    private Inbox() {
    }

    /**
     * @param inbox received payloads, or the Throwable that ended {@code receive()}
     * @param within how long to wait for the next one
     * @return the next payload
     */
    static byte[] take(LinkedBlockingQueue<Object> inbox, Duration within) {
        try {
            Object o = inbox.poll(within.toMillis(), TimeUnit.MILLISECONDS);
            if (o instanceof Throwable t) {
                throw new AssertionError("receive failed", t);
            }
            if (o == null) {
                throw new AssertionError("no message within " + within);
            }
            return (byte[]) o;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
