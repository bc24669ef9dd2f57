package rdmaflux.samples.boot;

import org.springframework.messaging.handler.annotation.MessageMapping;
import org.springframework.stereotype.Controller;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Spring messaging routes, written as for any RSocket transport. Their publishers run on the rdmaflux loop
 * that received the request (the transport's default), so they do not block.
 */
@Controller
public class Greetings {

    /** Created by Spring. */
    public Greetings() {
    }

    /**
     * Request-response.
     *
     * @param name who is greeted
     * @return the greeting
     */
    @MessageMapping("greet")
    public Mono<String> greet(String name) {
        return Mono.just("hello, " + name);
    }

    /**
     * Request-stream: {@code count} items, as many at a time as the requester asks for.
     *
     * @param count how many items, as text
     * @return the items
     */
    @MessageMapping("count")
    public Flux<String> count(String count) {
        int n = Integer.parseInt(count);
        return Flux.range(1, n).map(i -> "item " + i + " of " + n);
    }
}
