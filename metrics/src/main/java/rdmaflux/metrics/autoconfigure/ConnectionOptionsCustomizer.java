package rdmaflux.metrics.autoconfigure;

import rdmaflux.cm.ConnectionOptions;

/**
 * A bean that changes the connection options the auto-configuration builds, after the
 * {@code rdmaflux.connection.*} properties: for the options that are code, not values (a scheduler,
 * large-message memory, private data).
 */
@FunctionalInterface
public interface ConnectionOptionsCustomizer {
    /**
     * Changes the options being built.
     *
     * @param builder the options so far: the base options with the properties, loops and recorder applied
     */
    void customize(ConnectionOptions.Builder builder);
}
