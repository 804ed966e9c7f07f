package kvbench.worker;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * One open database, as kvbench's engines are everywhere (crates/kvbench-model's Engine trait,
 * the Go worker's worker.Engine). Keys and values handed in are buffers over the worker core's
 * memory, valid during the call only: an engine that keeps one copies it.
 */
public interface Engine extends AutoCloseable {
    /** Applies the writes as one batch or transaction where the engine has them. */
    void write(WriteBatch batch) throws Exception;

    /** A reader for one thread (a read transaction or snapshot where the engine has them). */
    Reader reader() throws Exception;

    /** Called once after the load phase, inside its timing. */
    default void finishLoad() throws Exception {}

    /** Work that is not opening the engine (the `prepare` step). */
    default void prepare() throws Exception {}

    /**
     * The untimed settle step: flush and compact, or wait until no compaction is pending; says
     * what was done. Without one the phase is N/A.
     */
    default String settle() throws Exception {
        throw new Unsupported("this engine has no settle (flush and compact) step");
    }

    /** The store's own counters, read outside every timed call (by a thread that runs none). */
    default Map<String, Double> internals() {
        return Map.of();
    }

    /** The knobs in effect (the sync mapping above all), for the result. */
    Map<String, String> settings();

    @Override
    void close() throws Exception;

    /** One thread's reads. */
    interface Reader extends AutoCloseable {
        /**
         * The value of the key between the buffer's position and limit, or null when absent. The
         * value stays valid until the next call on this reader.
         */
        ByteBuffer get(ByteBuffer key) throws Exception;

        /**
         * Visits up to limit records in key order from the first key >= start; the visitor
         * returns false to stop. Returns the number visited.
         */
        default long scan(ByteBuffer start, long limit, Visitor visit) throws Exception {
            throw new Unsupported("ordered scan");
        }

        /** After writes in a mixed phase: a reader holding a snapshot takes a new one. */
        default void refresh() throws Exception {}

        @Override
        void close() throws Exception;
    }

    /**
     * A reader whose values are fields, not bytes (a YCSB binding's): a read keeps the fields,
     * which the worker serialises after the timed call, for the core to check field by field.
     * The timed call is the read alone, as for every other reader.
     */
    interface FieldReader extends Reader {
        /** Reads the key's fields; false when the key is absent. */
        boolean read(ByteBuffer key) throws Exception;

        /** The fields last read, serialised as kvbench serialises a record (valid until the next read). */
        ByteBuffer serialised();

        /** The length of the fields last read, serialised (asked before serialiseTo). */
        default int serialisedLength() {
            return serialised().remaining();
        }

        /**
         * Puts the fields last read, serialised, into `to` from its position (serialisedLength
         * bytes): the worker's buffer of values read, with no copy in between. Once per read,
         * instead of serialised.
         */
        default void serialiseTo(ByteBuffer to) {
            to.put(serialised());
        }

        @Override
        default ByteBuffer get(ByteBuffer key) throws Exception {
            return read(key) ? serialised() : null;
        }
    }

    /** A scanned record; both buffers are valid during the call only. */
    interface Visitor {
        boolean visit(ByteBuffer key, ByteBuffer value);
    }

    /** Something the engine cannot do at all: the phase is N/A. */
    final class Unsupported extends Exception {
        public Unsupported(String what) {
            super("unsupported: " + what);
        }
    }

    /** The writes of one batch; buffers valid during the write call only. */
    interface WriteBatch {
        int size();

        ByteBuffer key(int i);

        /** The value to put; meaningless where {@link #delete} is true. */
        ByteBuffer value(int i);

        /** Deleting an absent key is no error. */
        boolean delete(int i);

        /**
         * The value holds fields of the stored record, serialised as a record, to merge in (the
         * engine's own update). Only an engine with the capability field-update is given one.
         */
        default boolean merge(int i) {
            return false;
        }
    }

    /** Copies a buffer's remaining bytes (for engines whose API takes arrays). */
    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
