package rdmaflux.cm;

import rdmaflux.cm.internal.loop.Loops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import reactor.core.scheduler.Schedulers;

/** Defaults, derivation and validation of the multicast and datagram options. */
class MulticastOptionsTest {

    @Test
    void multicastDefaults() {
        MulticastOptions o = MulticastOptions.defaults();
        assertNull(o.localAddress());
        assertEquals(64, o.receiveBuffers());
        assertEquals(32, o.sendBuffers());
        assertEquals(Duration.ofSeconds(2), o.addressTimeout());
        assertEquals(Duration.ofSeconds(10), o.joinTimeout());
        assertTrue(o.sendOnly());
        assertSame(Loops.sharedScheduler(), o.scheduler());
    }

    @Test
    void multicastDerivationKeepsTheRest() throws Exception {
        InetAddress local = InetAddress.getByName("192.0.2.1");
        MulticastOptions o = MulticastOptions.builder().receiveBuffers(8).sendOnly(false).build()
                .toBuilder().localAddress(local).build();
        assertEquals(local, o.localAddress());
        assertEquals(8, o.receiveBuffers());
        assertEquals(false, o.sendOnly());
    }

    @Test
    void multicastValidation() {
        assertThrows(IllegalArgumentException.class, () -> MulticastOptions.builder().receiveBuffers(0).build());
        assertThrows(IllegalArgumentException.class, () -> MulticastOptions.builder().sendBuffers(40_000).build());
        assertThrows(IllegalArgumentException.class, () -> MulticastOptions.builder().joinTimeout(Duration.ZERO).build());
        assertThrows(IllegalArgumentException.class,
                () -> MulticastOptions.builder().addressTimeout(Duration.ofSeconds(-1)).build());
        assertThrows(NullPointerException.class, () -> MulticastOptions.builder().scheduler(null).build());
    }

    /** The setters refuse at once, naming the option and what it allows. */
    @Test
    void settersRejectAtOnceAndSayWhatIsAllowed() {
        MulticastOptions.Builder m = MulticastOptions.builder();
        assertEquals("sendBuffers must be 1..32768, got 40000",
                assertThrows(IllegalArgumentException.class, () -> m.sendBuffers(40_000)).getMessage());
        assertEquals("joinTimeout must be positive, got PT0S",
                assertThrows(IllegalArgumentException.class, () -> m.joinTimeout(Duration.ZERO)).getMessage());
        assertEquals("recorder must not be null",
                assertThrows(NullPointerException.class, () -> m.recorder(null)).getMessage());
        DatagramOptions.Builder d = DatagramOptions.builder();
        assertEquals("routeTimeout must be positive, got PT-1S",
                assertThrows(IllegalArgumentException.class, () -> d.routeTimeout(Duration.ofSeconds(-1))).getMessage());
        assertEquals(MulticastOptions.defaults().toString(), m.build().toString());
        assertEquals(DatagramOptions.defaults().toString(), d.build().toString());
    }

    @Test
    void datagramDefaultsAndValidation() {
        DatagramOptions o = DatagramOptions.defaults();
        assertEquals(64, o.receiveBuffers());
        assertEquals(32, o.sendBuffers());
        assertEquals(Duration.ofSeconds(2), o.addressTimeout());
        assertEquals(Duration.ofSeconds(2), o.routeTimeout());
        assertEquals(Duration.ofSeconds(10), o.resolveTimeout());
        assertEquals(5, o.toBuilder().receiveBuffers(5).build().receiveBuffers());
        assertThrows(IllegalArgumentException.class, () -> DatagramOptions.builder().receiveBuffers(-1).build());
        assertThrows(IllegalArgumentException.class, () -> DatagramOptions.builder().resolveTimeout(Duration.ZERO).build());
    }

    @Test
    void sharedSettersChainIntoEitherBuilderAndToBuilderCopiesEverything() {
        RdmaRecorder recorder = new RdmaRecorder() {
        };
        DatagramOptions d = DatagramOptions.builder().receiveBuffers(3).routeTimeout(Duration.ofSeconds(4))
                .sendBuffers(7).addressTimeout(Duration.ofSeconds(5)).scheduler(Schedulers.single())
                .recorder(recorder).resolveTimeout(Duration.ofSeconds(6)).build();
        DatagramOptions copy = d.toBuilder().build();
        assertEquals(3, copy.receiveBuffers());
        assertEquals(7, copy.sendBuffers());
        assertEquals(Duration.ofSeconds(5), copy.addressTimeout());
        assertEquals(Duration.ofSeconds(4), copy.routeTimeout());
        assertEquals(Duration.ofSeconds(6), copy.resolveTimeout());
        assertSame(Schedulers.single(), copy.scheduler());
        assertSame(recorder, copy.recorder());

        MulticastOptions m = MulticastOptions.builder().sendBuffers(9).joinTimeout(Duration.ofSeconds(8))
                .recorder(recorder).sendOnly(false).build().toBuilder().build();
        assertEquals(9, m.sendBuffers());
        assertEquals(Duration.ofSeconds(8), m.joinTimeout());
        assertSame(recorder, m.recorder());
        assertEquals(false, m.sendOnly());
    }
}
