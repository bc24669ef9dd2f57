package rdmaflux.metrics;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * rdmaflux's observations, their names and keys, in Micrometer's documented form (tools such as
 * micrometer-docs-generator read it). docs/metrics.md lists the same.
 */
public enum RdmaObservationDocumentation implements ObservationDocumentation {
    /** A client's connect: from subscription to established, failed or cancelled. */
    CONNECT {
        @Override
        public String getName() {
            return "rdmaflux.connect";
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return new KeyName[] {LowCardinalityKeys.OUTCOME, LowCardinalityKeys.ERROR};
        }
    },
    /** A server's accept of a connect request its filter let in: from the request to established, failed or cancelled. */
    ACCEPT {
        @Override
        public String getName() {
            return "rdmaflux.accept";
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return new KeyName[] {LowCardinalityKeys.OUTCOME, LowCardinalityKeys.ERROR};
        }
    },
    /** One operation on a connection, observed on request ({@link RdmaObservations#operation}). */
    OPERATION {
        @Override
        public String getName() {
            return "rdmaflux.operation";
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return new KeyName[] {LowCardinalityKeys.OP, LowCardinalityKeys.OUTCOME, LowCardinalityKeys.ERROR};
        }
    };

    @Override
    public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
        return DefaultRdmaObservationConvention.class;
    }

    @Override
    public KeyName[] getHighCardinalityKeyNames() {
        return new KeyName[] {HighCardinalityKeys.REMOTE};
    }

    /** Keys with a bounded set of values: fit for meters. */
    public enum LowCardinalityKeys implements KeyName {
        /** {@code success}, {@code failure} or {@code cancelled}. */
        OUTCOME {
            @Override
            public String asString() {
                return RdmaTags.OUTCOME;
            }
        },
        /** The failure's exception simple name ({@code Rejected}, {@code StepTimeout}, ...), {@code none} otherwise. */
        ERROR {
            @Override
            public String asString() {
                return RdmaTags.ERROR;
            }
        },
        /** The operation: {@code send}, {@code write}, {@code write_imm}, {@code read}, {@code cas}, {@code faa}, ... */
        OP {
            @Override
            public String asString() {
                return RdmaTags.OP;
            }
        }
    }

    /** Keys with unbounded values: for traces, never for meters. */
    public enum HighCardinalityKeys implements KeyName {
        /** The peer's address and port ({@code 192.0.2.1:7471}), {@code unknown} when not known. */
        REMOTE {
            @Override
            public String asString() {
                return RdmaTags.REMOTE;
            }
        }
    }
}
