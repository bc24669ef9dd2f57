package rdmaflux.cm.rsocket;

import rdmaflux.cm.ConnectionOptions;
import reactor.core.scheduler.Schedulers;

/**
 * The connection options both transports use unless told otherwise: rdmaflux's defaults, with frames
 * handled on the thread that received them ({@code Schedulers.immediate()}: the connection's completion
 * loop), as rsocket-transport-netty handles them on its event loops. A hop to a scheduler per frame costs
 * two thread wake-ups per {@code REQUEST_N} round trip, which bounds channels consumed with
 * {@code limitRate}.
 */
final class TransportDefaults {
    /** The options of {@code create(address)}. */
    static final ConnectionOptions OPTIONS = ConnectionOptions.builder()
            .scheduler(Schedulers.immediate()).build();

    private TransportDefaults() {
    }
}
