package rdmaflux.cm;

import java.util.function.BiConsumer;

import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;

/** The process-wide CM and completion loops every connection, server, endpoint and group runs on. */
record SharedLoops(CmEventLoop cm, CompletionLoop completions) {

    /**
     * {@code Mono.create} whose body gets the shared loops. Starting the loops fails without a usable
     * rdma-core (no library, no device); that failure becomes the Mono's error instead of a throw
     * from {@code subscribe()}.
     */
    static <T> Mono<T> create(BiConsumer<MonoSink<T>, SharedLoops> body) {
        return Mono.create(sink -> {
            SharedLoops loops;
            try {
                loops = new SharedLoops(CmEventLoop.shared(), CompletionLoop.shared());
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            body.accept(sink, loops);
        });
    }
}
