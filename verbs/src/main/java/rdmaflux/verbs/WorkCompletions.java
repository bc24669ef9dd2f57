package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_wc;

/**
 * A reusable native array of work completions that {@link CompletionQueue#poll} fills. Fields are read
 * by index straight from native memory, so decoding a completion allocates nothing.
 *
 * <p>Not thread-safe: one batch per polling thread. The memory is freed by the garbage collector.
 */
public final class WorkCompletions {
    private static final long SIZE = ibv_wc.sizeof();
    private static final long WR_ID = ibv_wc.wr_id$offset();
    private static final long STATUS = ibv_wc.status$offset();
    private static final long OPCODE = ibv_wc.opcode$offset();
    private static final long VENDOR_ERR = ibv_wc.vendor_err$offset();
    private static final long BYTE_LEN = ibv_wc.byte_len$offset();
    private static final long IMM = ibv_wc.imm_data$offset();
    private static final long QP_NUM = ibv_wc.qp_num$offset();
    private static final long SRC_QP = ibv_wc.src_qp$offset();
    private static final long WC_FLAGS = ibv_wc.wc_flags$offset();
    private static final long SLID = ibv_wc.slid$offset();
    private static final int FLAG_GRH = 1;
    private static final int FLAG_WITH_IMM = 1 << 1;

    private final MemorySegment array;
    private final int capacity;
    private int count;

    /**
     * Allocates a batch.
     *
     * @param capacity how many completions one poll may return
     */
    public WorkCompletions(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be > 0, got " + capacity);
        }
        this.capacity = capacity;
        this.array = Arena.ofAuto().allocate(SIZE * capacity, ibv_wc.layout().byteAlignment());
    }

    /** {@return the most completions one poll returns} */
    public int capacity() {
        return capacity;
    }

    /** {@return how many completions the last poll returned} */
    public int count() {
        return count;
    }

    MemorySegment segment() {
        return array;
    }

    void setCount(int n) {
        count = n;
    }

    /**
     * Copies one completion into another batch, byte for byte (one {@code ibv_wc}), e.g. to hand it from a
     * CQ polled for many queue pairs to the queue pair's own inbox. The target's {@link #count()} grows to
     * cover index {@code at}, so its accessors read the copy.
     *
     * @param from index below {@link #count()} in this batch
     * @param to the target batch (not this one)
     * @param at index below {@code to.capacity()}
     */
    public void copy(int from, WorkCompletions to, int at) {
        if (at < 0 || at >= to.capacity) {
            throw new IndexOutOfBoundsException("slot " + at + " of " + to.capacity);
        }
        MemorySegment.copy(array, base(from), to.array, SIZE * at, SIZE);
        if (at >= to.count) {
            to.count = at + 1;
        }
    }

    /** Empties the batch ({@link #count()} 0): a batch filled by {@link #copy} is reused from index 0. */
    public void clear() {
        count = 0;
    }

    // Unchecked reads for the poll's own bookkeeping, which stays below the count the provider returned.

    long wrIdAt(int i) {
        return array.get(ibv_wc.wr_id$layout(), SIZE * i + WR_ID);
    }

    int statusAt(int i) {
        return array.get(ibv_wc.status$layout(), SIZE * i + STATUS);
    }

    int opcodeAt(int i) {
        return array.get(ibv_wc.opcode$layout(), SIZE * i + OPCODE);
    }

    int qpNumberAt(int i) {
        return array.get(ibv_wc.qp_num$layout(), SIZE * i + QP_NUM);
    }

    private long base(int i) {
        if (i < 0 || i >= count) {
            throw new IndexOutOfBoundsException("completion " + i + " of " + count);
        }
        return SIZE * i;
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the work request id given when posting
     */
    public long wrId(int i) {
        return array.get(ibv_wc.wr_id$layout(), base(i) + WR_ID);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the status
     */
    public WcStatus status(int i) {
        return WcStatus.of(array.get(ibv_wc.status$layout(), base(i) + STATUS));
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return whether the status is SUCCESS
     */
    public boolean isSuccess(int i) {
        return array.get(ibv_wc.status$layout(), base(i) + STATUS) == 0;
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the operation; undefined by verbs for failed completions
     */
    public WcOpcode opcode(int i) {
        return WcOpcode.of(array.get(ibv_wc.opcode$layout(), base(i) + OPCODE));
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the provider-specific error code of a failed completion
     */
    public int vendorError(int i) {
        return array.get(ibv_wc.vendor_err$layout(), base(i) + VENDOR_ERR);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return bytes received (receives) or transferred (reads, atomics)
     */
    public int byteLength(int i) {
        return array.get(ibv_wc.byte_len$layout(), base(i) + BYTE_LEN);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return whether the message carried immediate data
     */
    public boolean hasImmediate(int i) {
        return (flags(i) & FLAG_WITH_IMM) != 0;
    }

    /**
     * Reads a completion's immediate data.
     *
     * @param i index below {@link #count()}
     * @return the immediate data in host order (it travels in network order; this undoes that)
     */
    public int immediateData(int i) {
        return Integer.reverseBytes(array.get(ibv_wc.imm_data$layout(), base(i) + IMM));
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the local QP number the completion belongs to
     */
    public int qpNumber(int i) {
        return array.get(ibv_wc.qp_num$layout(), base(i) + QP_NUM);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the sender's QP number (UD receives)
     */
    public int sourceQp(int i) {
        return array.get(ibv_wc.src_qp$layout(), base(i) + SRC_QP);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the raw {@code wc_flags}
     */
    public int flags(int i) {
        return array.get(ibv_wc.wc_flags$layout(), base(i) + WC_FLAGS);
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return whether a 40-byte GRH precedes the payload (UD receives)
     */
    public boolean hasGrh(int i) {
        return (flags(i) & FLAG_GRH) != 0;
    }

    /**
     * Sets the index below {@link #count()}.
     *
     * @param i index below {@link #count()}
     * @return the sender's LID (InfiniBand UD receives)
     */
    public int sourceLid(int i) {
        return Short.toUnsignedInt(array.get(ibv_wc.slid$layout(), base(i) + SLID));
    }

    /**
     * Describes a completion for messages and logs (allocates).
     *
     * @param i index below {@link #count()}
     * @return e.g. {@code wr_id=7 status=REM_ACCESS_ERR opcode=RDMA_WRITE}
     */
    public String describe(int i) {
        WcStatus s = status(i);
        return "wr_id=" + wrId(i) + " status=" + s + (s == WcStatus.SUCCESS ? " opcode=" + opcode(i) + " bytes="
                + byteLength(i) : " (" + s.description() + ", vendor_err=0x" + Integer.toHexString(vendorError(i)) + ")");
    }
}
