package rdmaflux.verbs;

/**
 * An asynchronous device event, copied and acknowledged.
 *
 * @param type what happened
 * @param portNumber the port, for port events; 0 otherwise
 * @param qpNumber the QP number, for QP events; -1 otherwise
 */
public record AsyncEvent(AsyncEventType type, int portNumber, int qpNumber) {
}
