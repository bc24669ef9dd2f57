package rdmaflux.cm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.CmEventType;

/** The chaos run's judgment of failures, on faults with set times (the run itself takes them from clocks). */
class ChaosLedgerTest {
    private static final long DETECT = 10_000;
    private static final long CONNECT_SLACK = 30_000;
    private static final long RETRY = 2_000;

    private final ChaosLedger ledger = new ChaosLedger(DETECT, CONNECT_SLACK, RETRY, line -> { });

    private static String disconnected() {
        return ChaosLedger.describe(new RdmaCmException.Disconnected(Step.TRANSFER, "peer went away"));
    }

    /** A fault on {@code host} requested at {@code from}, in force at once, recovered at {@code to}. */
    private void fault(ChaosSchedule.Kind kind, int host, long from, long to) {
        ChaosLedger.Window w = ledger.begin(kind, host, from);
        w.effective = from;
        w.recovered = to;
    }

    @Test
    void aTypedFailureDuringAKillingFaultOnThePeersHostIsExplained() {
        fault(ChaosSchedule.Kind.PROCESS_KILL, 2, 100_000, 110_000);

        ledger.failure("h1->h2", 1, 2, 105_000, true, true, disconnected());

        assertThat(ledger.violations()).isEmpty();
        assertThat(ledger.failures()).containsEntry("rdmaflux.cm.RdmaCmException$Disconnected", 1);
    }

    @Test
    void aTypedFailureWithNoFaultOnEitherHostIsAViolation() {
        fault(ChaosSchedule.Kind.HOST_RESTART, 3, 100_000, 110_000);

        ledger.failure("h1->h2", 1, 2, 105_000, true, true, disconnected());

        assertThat(ledger.violations()).singleElement().asString()
                .contains("h1->h2 lost its connection with no fault on h1 or h2");
    }

    @Test
    void aCutShorterThanTheRetryTimeExplainsNoFailureOfAnEstablishedConnection() {
        fault(ChaosSchedule.Kind.LINK_CUT_SHORT, 2, 100_000, 100_000 + RETRY - 1);

        ledger.failure("h1->h2", 1, 2, 100_500, true, true, disconnected());

        assertThat(ledger.violations()).singleElement().asString().contains("no fault on h1 or h2");
    }

    @Test
    void aFailureLaterThanTheDetectionBoundAfterRecoveryIsAViolation() {
        fault(ChaosSchedule.Kind.PROCESS_KILL, 2, 100_000, 110_000);

        ledger.failure("h1->h2", 1, 2, 110_000 + 2_000 + DETECT + 1, true, true, disconnected());

        assertThat(ledger.violations()).hasSize(1);
    }

    @Test
    void anUntypedFailureIsAViolationEvenUnderAFault() {
        fault(ChaosSchedule.Kind.PROCESS_KILL, 2, 100_000, 110_000);

        ledger.failure("h1->h2", 1, 2, 105_000, true, false,
                ChaosLedger.describe(new IllegalStateException("boom")));

        assertThat(ledger.violations()).singleElement().asString().contains("untyped error");
    }

    @Test
    void anIllegalEventIsAViolationEvenUnderAFaultAndNamesItsEventAndState() {
        fault(ChaosSchedule.Kind.LINK_CUT_LONG, 2, 100_000, 120_000);

        ledger.failure("h1->h2", 1, 2, 105_000, true, true, ChaosLedger.describe(new RdmaCmException.IllegalEvent(
                Step.TRANSFER, CmEventType.ADDR_RESOLVED, new ConnectionState.Established())));

        assertThat(ledger.violations()).singleElement().asString()
                .contains("event its state does not allow")
                .contains("ADDR_RESOLVED")
                .contains("Established");
    }
}
