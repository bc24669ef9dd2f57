package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import rdmaflux.cm.ConnectionOptions;
import reactor.core.scheduler.Schedulers;

/**
 * {@link CrossHostRows.Mode}: each reactive row's two sides wait for completions the same way, and a quick run
 * measures the targeted rows only.
 */
class CrossHostModesTest {

    @Test
    void eachModeWaitsAsItsCToolDoes() {
        for (CrossHostRows.Mode m : CrossHostRows.Mode.values()) {
            boolean busy = m.options(2).completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL;
            assertEquals(!busy, m.perftestEvents, m + ": ours busy polls exactly when perftest runs without -e");
            assertEquals(m.perftestEvents ? "ib_send_lat -e" : "ib_send_lat", m.tool(), m.toString());
        }
    }

    @Test
    void targetedModesSignalOnTheLoopThatWokeAsPerftestAnswersOnItsOneThread() {
        for (CrossHostRows.Mode m : CrossHostRows.Mode.values()) {
            if (m.target != Row.Target.NONE) {
                assertSame(Schedulers.immediate(), m.options(2).scheduler(), m.toString());
            }
        }
        assertNotSame(Schedulers.immediate(), CrossHostRows.Mode.EVENTS_DEFAULT.options(2).scheduler(),
                "the default options' row hands messages to a signal thread");
    }

    @Test
    void aQuickRunMeasuresTheTargetedModesOnly() {
        assertEquals(List.of(CrossHostRows.Mode.BUSY, CrossHostRows.Mode.EVENTS), CrossHostRows.Mode.measured(true));
        assertEquals(List.of(CrossHostRows.Mode.values()), CrossHostRows.Mode.measured(false));
        assertTrue(CrossHostRows.Mode.measured(true).stream().allMatch(m -> m.target == CrossHostRows.REACTIVE_TARGET));
    }
}
