package rdmaflux.cm.internal.memory;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * What the registration cache refuses before it looks anything up (no device needed: nothing reaches the
 * protection domain), and what its key tells apart. Sharing and deregistration are counted in the
 * kernel by {@code SharedDomainIT}.
 */
class RegistrationsTest {
    /** No protection domain: any call that got past the checks would fail with a NullPointerException. */
    private final Registrations cache = new Registrations(null);

    @Test
    void heapMemoryIsRefusedBeforeTheLookupSinceItsAddressIsAnOffset() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> cache.lease(MemorySegment.ofArray(new byte[64]), AccessFlags.LOCAL_WRITE, null));
        assertEquals(true, e.getMessage().contains("native memory"), e.getMessage());
    }

    @Test
    void memoryOfAClosedArenaIsRefused() {
        MemorySegment gone;
        try (Arena arena = Arena.ofConfined()) {
            gone = arena.allocate(64);
        }
        assertThrows(IllegalStateException.class, () -> cache.lease(gone, AccessFlags.LOCAL_WRITE, null));
    }

    @Test
    void missingArgumentsAreRefused() {
        assertThrows(NullPointerException.class, () -> cache.lease(null, AccessFlags.LOCAL_WRITE, null));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(64);
            assertThrows(NullPointerException.class, () -> cache.lease(m, null, null));
        }
    }

    @Test
    void theKeyTellsLengthAndAccessApart() {
        Registrations.Key a = new Registrations.Key(4096, 64, AccessFlags.LOCAL_WRITE.mask());
        assertEquals(a, new Registrations.Key(4096, 64, AccessFlags.LOCAL_WRITE.mask()));
        assertNotEquals(a, new Registrations.Key(4096, 128, AccessFlags.LOCAL_WRITE.mask()));
        assertNotEquals(a, new Registrations.Key(4096, 64,
                AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ).mask()));
    }
}
