package rdmaflux.cm.internal.util;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import org.junit.jupiter.api.Test;

class AddressAttemptTest {
    private static final long MS = 1_000_000;

    @Test
    void aLongStepIsResolvedInAttemptsOfOneProbeInterval() {
        assertEquals(AddressAttempt.ATTEMPT, AddressAttempt.timeout(Duration.ofSeconds(12), 0));
        assertEquals(AddressAttempt.ATTEMPT, AddressAttempt.timeout(Duration.ofSeconds(12), 10_000 * MS));
    }

    @Test
    void theLastAttemptEndsWithTheStep() {
        assertEquals(Duration.ofMillis(700), AddressAttempt.timeout(Duration.ofSeconds(12), 11_300 * MS));
        assertEquals(Duration.ofMillis(500), AddressAttempt.timeout(Duration.ofMillis(500), 0));
    }

    @Test
    void anAttemptAtOrPastTheDeadlineGetsTheLeastTimeAndTheStepsTimerEndsIt() {
        assertEquals(AddressAttempt.LEAST, AddressAttempt.timeout(Duration.ofSeconds(2), 1_950 * MS));
        assertEquals(AddressAttempt.LEAST, AddressAttempt.timeout(Duration.ofSeconds(2), 3_000 * MS));
    }

    @Test
    void aStepWithoutTimeoutIsResolvedInAttemptsForever() {
        assertEquals(AddressAttempt.ATTEMPT, AddressAttempt.timeout(null, Long.MAX_VALUE));
    }
}
