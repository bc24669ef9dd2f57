/**
 * A consumer of rdmaflux as a user's application would be one. It requires only {@code rdmaflux.cm}:
 * rdmaflux's verbs types and Reactor's come through its {@code requires transitive}. RSocket and
 * rdmaflux's Micrometer meters are optional here as they are in rdmaflux: {@code requires static},
 * so the program runs without them, and uses them when the launcher resolves them
 * ({@code --add-modules}).
 */
module example.consumer {
    requires rdmaflux.cm;
    requires static rsocket.core;
    requires static rdmaflux.metrics;
}
