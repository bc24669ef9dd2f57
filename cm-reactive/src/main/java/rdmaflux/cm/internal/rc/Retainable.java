package rdmaflux.cm.internal.rc;

/**
 * A message of one delivery that an auto-releasing receive ({@link ReceivedMessages}) releases after the
 * subscriber's {@code onNext}, unless the subscriber retained it there.
 *
 * <p>Threads: the subscriber's {@code onNext} retains it, and the same thread asks after it.
 */
interface Retainable {
    /** {@return whether the subscriber retained this message: its release is then the subscriber's} */
    boolean retained();
}
