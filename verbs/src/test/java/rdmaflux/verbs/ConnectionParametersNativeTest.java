package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import rdmaflux.verbs.ffi.rdma_conn_param;

/**
 * The connection parameters' bulk encoding ({@link NativeImage}) against the jextract accessors of
 * {@code struct rdma_conn_param}: what one writes, the other must read, field by field.
 */
class ConnectionParametersNativeTest {

    @Test
    void writeToProducesTheStructTheAccessorsRead() {
        ConnectionParameters p = new ConnectionParameters(new byte[] {1, 2, 3, 4, 5}, 3, 2, true, 6, 5, true,
                0xABCDEF);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(rdma_conn_param.layout());
            s.fill((byte) 0x5A); // garbage the write must fully replace
            MemorySegment data = arena.allocate(256);
            p.writeTo(s, data);
            assertEquals(data.address(), rdma_conn_param.private_data(s).address());
            assertEquals(5, rdma_conn_param.private_data_len(s));
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, data.asSlice(0, 5).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(3, rdma_conn_param.responder_resources(s));
            assertEquals(2, rdma_conn_param.initiator_depth(s));
            assertEquals(1, rdma_conn_param.flow_control(s));
            assertEquals(6, rdma_conn_param.retry_count(s));
            assertEquals(5, rdma_conn_param.rnr_retry_count(s));
            assertEquals(1, rdma_conn_param.srq(s));
            assertEquals(0xABCDEF, rdma_conn_param.qp_num(s));
        }
    }

    @Test
    void emptyPrivateDataIsANullPointer() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(rdma_conn_param.layout());
            s.fill((byte) 0x5A);
            ConnectionParameters.DEFAULTS.writeTo(s, arena.allocate(256));
            assertEquals(0, rdma_conn_param.private_data(s).address());
            assertEquals(0, rdma_conn_param.private_data_len(s));
            assertEquals(7, rdma_conn_param.rnr_retry_count(s));
        }
    }

    @Test
    void fromImageReadsWhatFromNativeReads() {
        try (Arena arena = Arena.ofConfined()) {
            // The struct at a non-zero offset, as inside struct rdma_cm_event.
            long base = 24;
            int longs = (int) (base / 8) + ConnectionParameters.Layout.IMAGE_LONGS;
            MemorySegment block = arena.allocate(8L * longs, 8);
            MemorySegment s = block.asSlice(base, rdma_conn_param.sizeof());
            MemorySegment data = arena.allocate(3);
            data.copyFrom(MemorySegment.ofArray(new byte[] {9, 8, 7}));
            rdma_conn_param.private_data(s, data);
            rdma_conn_param.private_data_len(s, (byte) 3);
            rdma_conn_param.responder_resources(s, (byte) 200);
            rdma_conn_param.initiator_depth(s, (byte) 4);
            rdma_conn_param.flow_control(s, (byte) 0);
            rdma_conn_param.retry_count(s, (byte) 7);
            rdma_conn_param.rnr_retry_count(s, (byte) 1);
            rdma_conn_param.srq(s, (byte) 0);
            rdma_conn_param.qp_num(s, 0xFFFFFF);
            long[] image = block.toArray(ValueLayout.JAVA_LONG);
            ConnectionParameters viaImage = ConnectionParameters.fromImage(image, base);
            assertEquals(ConnectionParameters.fromNative(s), viaImage);
            assertEquals(200, viaImage.responderResources());
            assertArrayEquals(new byte[] {9, 8, 7}, viaImage.privateData());
        }
    }

    @Test
    void noPrivateDataIsSharedAndPrivateDataIsStillCopied() {
        assertSame(ConnectionParameters.NO_DATA, ConnectionParameters.DEFAULTS.privateData());
        byte[] data = {1};
        ConnectionParameters p = ConnectionParameters.DEFAULTS.withPrivateData(data);
        data[0] = 2;
        assertArrayEquals(new byte[] {1}, p.privateData());
        p.privateData()[0] = 3;
        assertArrayEquals(new byte[] {1}, p.privateData());
    }

    @Test
    void nativeImageFieldsMatchMemorySegmentAccess() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(16, 8);
            long[] image = new long[2];
            NativeImage.put(image, 0, 4, 0x11223344);
            NativeImage.put(image, 4, 2, 0xBEEF);
            NativeImage.put(image, 6, 1, 0x7F);
            NativeImage.put(image, 7, 1, 0xFF);
            NativeImage.put(image, 8, 8, 0x0102030405060708L);
            MemorySegment.copy(image, 0, s, ValueLayout.JAVA_LONG, 0, 2);
            assertEquals(0x11223344, s.get(ValueLayout.JAVA_INT, 0));
            assertEquals((short) 0xBEEF, s.get(ValueLayout.JAVA_SHORT, 4));
            assertEquals(0x7F, s.get(ValueLayout.JAVA_BYTE, 6));
            assertEquals((byte) 0xFF, s.get(ValueLayout.JAVA_BYTE, 7));
            assertEquals(0x0102030405060708L, s.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(0xBEEF, NativeImage.get(image, 4, 2));
            assertEquals(0xFF, NativeImage.get(image, 7, 1));
            assertEquals(0x11223344, NativeImage.get(image, 0, 4));
            // Overwriting one field leaves its neighbours alone.
            NativeImage.put(image, 4, 2, 0x1234);
            assertEquals(0x11223344, NativeImage.get(image, 0, 4));
            assertEquals(0x7F, NativeImage.get(image, 6, 1));
            assertThrows(IllegalArgumentException.class, () -> NativeImage.get(image, 6, 4));
        }
    }
}
