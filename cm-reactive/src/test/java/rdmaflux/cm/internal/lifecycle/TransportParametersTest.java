package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionOptions;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import rdmaflux.verbs.ConnectionParameters;

class TransportParametersTest {
    private static final TransportParameters.Limits RXE = new TransportParameters.Limits("rxe0", 128, 64);
    private static final byte[] DATA = {1, 2, 3};

    private static ConnectionOptions.Builder options() {
        return ConnectionOptions.defaults().toBuilder();
    }

    @Test
    void defaultsAskLibrdmacmForTheDeviceMaximum() {
        ConnectionParameters p = TransportParameters.forConnect(ConnectionOptions.defaults(), RXE, DATA);
        assertEquals(TransportParameters.RDMA_MAXIMUM, p.initiatorDepth());
        assertEquals(TransportParameters.RDMA_MAXIMUM, p.responderResources());
        assertEquals(6, p.retryCount());
        assertEquals(7, p.rnrRetryCount());
        assertArrayEquals(DATA, p.privateData());
    }

    @Test
    void explicitValuesWithinTheLimitsAreUsedAsGiven() {
        ConnectionOptions o = options().initiatorDepth(128).responderResources(3).retryCount(2).rnrRetryCount(4)
                .build();
        ConnectionParameters p = TransportParameters.forConnect(o, RXE, DATA);
        assertEquals(128, p.initiatorDepth());
        assertEquals(3, p.responderResources());
        assertEquals(2, p.retryCount());
        assertEquals(4, p.rnrRetryCount());
    }

    @Test
    void anInitiatorDepthBeyondTheDeviceFailsNamingOptionValueDeviceAndLimit() {
        ConnectionOptions o = options().initiatorDepth(129).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TransportParameters.forConnect(o, RXE, DATA));
        for (String part : new String[] {"initiatorDepth", "129", "rxe0", "128", "max_qp_init_rd_atom"}) {
            assertTrue(e.getMessage().contains(part), e.getMessage());
        }
    }

    @Test
    void responderResourcesBeyondTheDeviceFailOnAcceptToo() {
        ConnectionOptions o = options().responderResources(65).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TransportParameters.forAccept(o, RXE, null, DATA));
        assertTrue(e.getMessage().contains("max_qp_rd_atom"), e.getMessage());
        assertTrue(e.getMessage().contains("64"), e.getMessage());
    }

    @Test
    void acceptNeverOffersMoreThanTheRequestAsked() {
        // From the acceptor's point of view: the peer reads at most 2 in flight, serves at most 5.
        ConnectionParameters request = new ConnectionParameters(null, 2, 5, false, 7, 7, false, 0);
        ConnectionOptions o = options().initiatorDepth(16).responderResources(16).build();
        ConnectionParameters p = TransportParameters.forAccept(o, RXE, request, DATA);
        assertEquals(2, p.responderResources());
        assertEquals(5, p.initiatorDepth());
    }

    @Test
    void acceptKeepsSmallerExplicitValuesAndLeavesTheMaximumToLibrdmacm() {
        ConnectionParameters request = new ConnectionParameters(null, 8, 8, false, 7, 7, false, 0);
        ConnectionOptions o = options().initiatorDepth(1).build();
        ConnectionParameters p = TransportParameters.forAccept(o, RXE, request, DATA);
        assertEquals(1, p.initiatorDepth());
        assertEquals(TransportParameters.RDMA_MAXIMUM, p.responderResources());
    }
}
