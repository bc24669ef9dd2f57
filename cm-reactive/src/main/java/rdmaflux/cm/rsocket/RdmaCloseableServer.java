package rdmaflux.cm.rsocket;

import io.rsocket.Closeable;

import java.net.InetSocketAddress;

/**
 * A started {@link RdmaServerTransport}: its address, and RSocket's {@code dispose()}/{@code onClose()},
 * which stop listening. Connections already accepted live on until RSocket or their peer closes them.
 */
public interface RdmaCloseableServer extends Closeable {
    /** {@return the bound address, with the port the system picked when asked for port 0} */
    InetSocketAddress address();
}
