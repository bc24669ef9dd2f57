package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import reactor.test.StepVerifier;

/** Argument checks that fail before anything touches RDMA, so they run on any host. */
class RdmaMulticastTest {
    private static final Duration T = Duration.ofSeconds(10);

    @Test
    void unicastAddressIsNoGroup() throws Exception {
        InetAddress unicast = InetAddress.getByName("192.0.2.1");
        StepVerifier.create(RdmaMulticast.joinMulticast(unicast))
                .expectErrorMatches(e -> e instanceof IllegalArgumentException
                        && e.getMessage().contains("not a multicast address"))
                .verify(T);
        StepVerifier.create(RdmaMulticast.sender(unicast, MulticastOptions.defaults()))
                .expectError(IllegalArgumentException.class).verify(T);
        StepVerifier.create(RdmaMulticast.join(InetAddress.getByName("2001:db8::1"), MulticastOptions.defaults()))
                .expectError(IllegalArgumentException.class).verify(T);
    }

    @Test
    void nullsAreRejected() {
        assertThrows(NullPointerException.class, () -> RdmaMulticast.joinMulticast(null));
        assertThrows(NullPointerException.class,
                () -> RdmaMulticast.sender(InetAddress.getByName("239.1.1.1"), null));
    }

    @Test
    void endpointNeedsAConcreteAddress() {
        StepVerifier.create(RdmaDatagramEndpoint.bind(new InetSocketAddress("0.0.0.0", 7174)))
                .expectError(IllegalArgumentException.class).verify(T);
    }
}
