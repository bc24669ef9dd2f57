package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.RdmaException;

/**
 * CM calls that fail synchronously, said as the typed exception their error event would have produced.
 *
 * <p>Threads: any; stateless.
 */
final class StepErrors {
    private StepErrors() {
    }

    /**
     * A CM call that failed synchronously, as the typed exception its error event would have produced
     * (status = -errno, like an event's), so callers branch on one type whichever way it failed.
     *
     * @param step the step the call belongs to
     * @param type the error event the failure stands for
     * @param cause what the call threw
     * @return {@code cause} when it is typed already, else the typed exception with {@code cause} suppressed
     */
    static RdmaCmException of(Step step, CmEventType type, RdmaException cause) {
        if (cause instanceof RdmaCmException typed) {
            return typed;
        }
        RdmaCmException e = RdmaCmException.of(step, type, -cause.errno(), null);
        e.addSuppressed(cause);
        return e;
    }
}
