package rdmaflux.samples.ping;

/** The peer broke the rping protocol, or a ping came back (or arrived) with the wrong bytes. */
public final class RpingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong, in the peer's terms
     */
    public RpingException(String message) {
        super(message);
    }
}
