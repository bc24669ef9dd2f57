package rdmaflux.metrics.autoconfigure;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaUnavailableException;

/** Matches when rdma-core is installed and a usable RDMA device exists ({@link Rdma#isAvailable()}). */
final class OnRdmaAvailableCondition extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        RdmaUnavailableException cause = Rdma.unavailabilityCause();
        return cause == null ? ConditionOutcome.match("RDMA is available")
                : ConditionOutcome.noMatch("RDMA is unavailable: " + cause.getMessage());
    }
}
