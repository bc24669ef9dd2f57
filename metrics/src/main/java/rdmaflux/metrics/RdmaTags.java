package rdmaflux.metrics;

/**
 * The one tag vocabulary of rdmaflux's meters ({@link MicrometerRdmaRecorder}) and observations
 * ({@link RdmaObservations}): the same key means the same thing, with the same values, wherever it appears,
 * so a dashboard, an alert or a {@code MeterFilter} written for one matches the other.
 *
 * <p>The error key is {@link #ERROR}, as in Micrometer's own observation handlers
 * ({@code DefaultMeterObservationHandler} tags every observation timer with {@code error}): an observation's
 * timer and the recorder's counters then agree without a rename.
 */
public final class RdmaTags {
    /** How a connect, accept or operation ended: {@link #SUCCESS}, {@link #FAILURE} or {@link #CANCELLED}. */
    public static final String OUTCOME = "outcome";
    /** The failure's exception simple name ({@code Rejected}, {@code StepTimeout}, ...); {@link #NONE} otherwise. */
    public static final String ERROR = "error";
    /** The peer's IP address, never its port; opt-in on meters, capped ({@link #OTHER}, {@link #UNKNOWN}). */
    public static final String REMOTE = "remote";
    /** A connection step: {@code address}, {@code route}, {@code connect}, {@code accept}, {@code disconnect}. */
    public static final String STEP = "step";
    /** An operation: {@code send}, {@code write}, {@code write_imm}, {@code read}, {@code cas}, {@code faa}, {@code other}. */
    public static final String OP = "op";
    /** A failed work completion's status, lower case without {@code IBV_WC_} ({@code rem_access_err}, ...). */
    public static final String STATUS = "status";
    /** A connection manager event's type, lower case ({@code established}, {@code disconnected}, ...). */
    public static final String TYPE = "type";
    /** Why a multicast datagram was dropped: {@code overflow}, {@code error}, {@link #OTHER}. */
    public static final String REASON = "reason";
    /** The side of a connection: {@link #CLIENT} or {@link #SERVER} (observations; the meters have a name per side). */
    public static final String SIDE = "side";

    /** {@link #OUTCOME}: established, or completed. */
    public static final String SUCCESS = "success";
    /** {@link #OUTCOME}: failed; {@link #ERROR} names the exception. */
    public static final String FAILURE = "failure";
    /** {@link #OUTCOME}: cancelled or closed before it ended. */
    public static final String CANCELLED = "cancelled";
    /** {@link #ERROR} when there was none. */
    public static final String NONE = "none";
    /** The shared value once a tag's cap is reached. */
    public static final String OTHER = "other";
    /** The value when the real one is not known ({@link #REMOTE} without a peer, a failure without a name). */
    public static final String UNKNOWN = "unknown";
    /** {@link #SIDE}: the connecting side. */
    public static final String CLIENT = "client";
    /** {@link #SIDE}: the accepting side. */
    public static final String SERVER = "server";

    private RdmaTags() {
    }
}
