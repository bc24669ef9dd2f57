package rdmaflux.cm.internal.loop;

import rdmaflux.cm.RdmaLoops;

import java.util.function.BiConsumer;

import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;

/**
 * The CM loop and a completion loop of {@link RdmaLoops#shared()}, for endpoints and groups, and the loops
 * themselves (their handles; the layers above keep their per-device resources on them).
 */
public record SharedLoops(Loops loops, CmEventLoop cm, CompletionLoop completions) {

    /**
     * {@code Mono.create} whose body gets the shared loops. Starting the loops fails without a usable
     * rdma-core (no library, no device); that failure becomes the Mono's error instead of a throw
     * from {@code subscribe()}.
     */
    public static <T> Mono<T> create(BiConsumer<MonoSink<T>, SharedLoops> body) {
        return Mono.create(sink -> {
            SharedLoops loops;
            try {
                Loops shared = Loops.shared();
                loops = new SharedLoops(shared, shared.cm(), shared.nextCompletionLoop());
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            body.accept(sink, loops);
        });
    }
}
