package rdmaflux.testing;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;

import rdmaflux.verbs.WorkCompletions;
import rdmaflux.verbs.ffi.ibv_wc;

/**
 * Test fixture for the layers above verbs: a batch of work completions as a poll would have returned
 * them, without a device. It reaches the batch's memory and count reflectively: they are internal to
 * verbs, and no production code may write a completion.
 */
public final class TestCompletions {
    private TestCompletions() {
    }

    /**
     * A polled batch of successful completions.
     *
     * @param qpNumbers each completion's {@code qp_num}
     * @param wrIds each completion's {@code wr_id}, same length
     * @return the batch, {@code count()} = the number of completions
     */
    public static WorkCompletions of(int[] qpNumbers, long[] wrIds) {
        WorkCompletions wc = new WorkCompletions(Math.max(1, qpNumbers.length));
        try {
            Method segment = WorkCompletions.class.getDeclaredMethod("segment");
            segment.setAccessible(true);
            Method setCount = WorkCompletions.class.getDeclaredMethod("setCount", int.class);
            setCount.setAccessible(true);
            MemorySegment array = (MemorySegment) segment.invoke(wc);
            for (int i = 0; i < qpNumbers.length; i++) {
                MemorySegment s = array.asSlice(ibv_wc.sizeof() * i, ibv_wc.sizeof());
                ibv_wc.wr_id(s, wrIds[i]);
                ibv_wc.qp_num(s, qpNumbers[i]);
            }
            setCount.invoke(wc, qpNumbers.length);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
        return wc;
    }
}
