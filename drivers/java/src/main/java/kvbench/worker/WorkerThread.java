package kvbench.worker;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.LockSupport;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One thread of an ops step: it runs the blocks its kvb_thread hands out (the Go worker's
 * thread.go). Keys are handed to the engine as one direct buffer over the core's block, its
 * position and limit set to the key: no copy, no allocation per get.
 */
final class WorkerThread {
    /** One kvb_next and one kvb_done per this many units. */
    static final int BLOCK_UNITS = 256;
    /** Bytes of scanned records handed to the core at once. */
    static final int SCAN_FLUSH = 1 << 20;
    /** How long before a due time waiting stops sleeping: a sleep ends late by the kernel's
     * wake-up latency, which an open loop would count as latency. */
    static final long SPIN_NS = 100_000;
    /** kvb_error's unit for an error outside every unit. */
    static final int NO_UNIT = -1;
    static final int MATCHED = Core.abi("KVB_MATCHED");
    static final int GET = Core.abi("KVB_GET");
    static final int MULTI_GET = Core.abi("KVB_MULTI_GET");
    static final int SCAN = Core.abi("KVB_SCAN");
    static final int WRITE = Core.abi("KVB_WRITE");
    static final int RMW = Core.abi("KVB_RMW");
    static final int OPEN_GET = Core.abi("KVB_OPEN_GET");
    static final int DELETE = Core.abi("KVB_DELETE");
    static final int MERGE_FIELDS = Core.abi("KVB_MERGE_FIELDS");
    /** Offsets of the block's fields, found once: a layout path lookup per block costs more than
     * a small block's engine calls. */
    private static final long PLAIN = Core.off(Core.BLOCK, "plain"), KIND = Core.off(Core.BLOCK, "kind"),
            REFRESH = Core.off(Core.BLOCK, "refresh"), DUE = Core.off(Core.BLOCK, "due"),
            KEY_END = Core.off(Core.BLOCK, "key_end"), SCAN_LEN = Core.off(Core.BLOCK, "scan_len"),
            KEY_OFF = Core.off(Core.BLOCK, "key_off"), VAL_OFF = Core.off(Core.BLOCK, "val_off"),
            DEL = Core.off(Core.BLOCK, "del"), EXP = Core.off(Core.BLOCK, "exp"),
            EXP_LEN = Core.off(Core.BLOCK, "exp_len"), KEY = Core.off(Core.BLOCK, "key"),
            VAL = Core.off(Core.BLOCK, "val");
    /** Every address, for comparing a value with the bytes the core expects in place. */
    static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** A thread's native buffers, kept by the runner from one ops step to the next. */
    static final class Buffers {
        final Arena arena = Arena.ofAuto();
        final MemorySegment times = arena.allocate(JAVA_LONG, 2 * BLOCK_UNITS);
        MemorySegment gotLen = arena.allocate(JAVA_INT, BLOCK_UNITS);
        /** The size asked of the core's buffer of values read (kvb_got) at a block's start. */
        long gotCap = 64 << 10;
        MemorySegment scanned = arena.allocate(SCAN_FLUSH + (64 << 10));

        MemorySegment grow(MemorySegment s, long need) {
            return need <= s.byteSize() ? s : arena.allocate(Math.max(need, 2 * s.byteSize()));
        }
    }

    private final Runner r;
    private final Buffers b;
    private final MemorySegment c;
    private final boolean shared;
    private final String mode;
    private Engine.Reader rd;
    /** rd when its values are fields (serialised after the timed read), else null. */
    private Engine.FieldReader fr;
    private Throwable openErr;
    long start;

    // The current block, as segments over the core's memory (valid until the next kvb_next).
    private int units, keys;
    private MemorySegment kind, refresh, due, keyEnd, scanLen, key, keyOff, val, valOff, del, exp, expLen;
    private ByteBuffer keyBuf;
    /** The value a get unit's timed read returned, until it is handed to the core. */
    private ByteBuffer value;
    /** The block's values read, in the core's buffer (kvb_got): handed back without a copy. */
    private MemorySegment got = MemorySegment.NULL;
    /** got as a buffer, for a reader that serialises fields into it (made when first asked). */
    private ByteBuffer gotBuf;
    private long gotPos;
    private final BlockBatch batch = new BlockBatch();

    WorkerThread(Runner r, Buffers b, int t, boolean shared, boolean reads, boolean openPerOp, String mode) {
        this.r = r;
        this.b = b;
        this.shared = shared;
        this.mode = mode;
        this.c = Runner.call(() -> (MemorySegment) Core.THREAD_NEW.invokeExact(r.job, t, BLOCK_UNITS));
        if (c.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("kvb_thread_new: no ops step is running");
        }
        if (openPerOp) {
            return;
        }
        if (r.eng == null) {
            openErr = new IllegalStateException("ops step: the engine is not open");
        } else if (reads) {
            try {
                rd = r.eng.reader();
                fr = rd instanceof Engine.FieldReader f ? f : null;
            } catch (Throwable e) {
                openErr = e;
            }
        }
    }

    /** Runs the thread's blocks, then closes its reader. */
    void run() {
        Timer.noSlack();
        try {
            if (openErr != null) {
                fail(NO_UNIT, openErr, 0);
            } else {
                while (block()) {
                    // next block
                }
            }
            if (rd != null) {
                try {
                    rd.close();
                } catch (Throwable e) {
                    fail(NO_UNIT, e, now());
                }
            }
        } catch (Throwable e) {
            // A bug of the worker: the core counts it as the thread's error.
            fail(NO_UNIT, e, now());
        } finally {
            Runner.call(() -> {
                Core.THREAD_END.invokeExact(c);
                return null;
            });
        }
    }

    private long now() {
        return System.nanoTime() - start;
    }

    /** Reports an engine error; true when the thread must stop. */
    private boolean fail(int u, Throwable e, long at) {
        System.err.println("engine error: " + Runner.message(e));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment kindS = a.allocateFrom(Runner.kindOf(e));
            MemorySegment msg = a.allocateFrom(Runner.message(e));
            return Runner.call(() -> (int) Core.ERROR.invokeExact(c, u, kindS, msg, at)) == 1;
        }
    }

    /** Runs the next block of units; false when the thread is done. */
    private boolean block() {
        MemorySegment p = Runner.call(() -> (MemorySegment) Core.NEXT.invokeExact(c));
        if (p.equals(MemorySegment.NULL)) {
            return false;
        }
        p = p.reinterpret(Core.BLOCK.byteSize());
        units = p.get(JAVA_INT, 0);
        if (units == 0) {
            return false;
        }
        set(p);
        gotPos = 0;
        got = MemorySegment.NULL; // asked of the core at the block's first value read
        b.gotLen = b.grow(b.gotLen, 4L * keys);
        b.gotLen.asSlice(0, 4L * keys).fill((byte) 0xff); // -1: nothing read
        try {
            if (p.get(JAVA_BYTE, PLAIN) == 1) {
                int[] ran = {units};
                boolean stop = gets(ran);
                done(ran[0]);
                return !stop;
            }
            for (int u = 0; u < units; u++) {
                if (unit(u)) {
                    done(u + 1);
                    return false;
                }
            }
            done(units);
            return true;
        } finally {
            release();
        }
    }

    private static MemorySegment at(MemorySegment p, long field, long bytes) {
        MemorySegment a = p.get(ADDRESS, field);
        return a.equals(MemorySegment.NULL) ? MemorySegment.NULL : a.reinterpret(bytes);
    }

    private void set(MemorySegment p) {
        int n = units;
        kind = at(p, KIND, n);
        refresh = at(p, REFRESH, n);
        due = at(p, DUE, 8L * n);
        keyEnd = at(p, KEY_END, 4L * n);
        scanLen = at(p, SCAN_LEN, 8L * n);
        keys = keyEnd.getAtIndex(JAVA_INT, n - 1);
        keyOff = at(p, KEY_OFF, 4L * (keys + 1));
        valOff = at(p, VAL_OFF, 4L * (keys + 1));
        del = at(p, DEL, keys);
        exp = at(p, EXP, 8L * keys);
        expLen = at(p, EXP_LEN, 4L * keys);
        key = keyOff.equals(MemorySegment.NULL) ? MemorySegment.NULL
                : at(p, KEY, Integer.toUnsignedLong(keyOff.getAtIndex(JAVA_INT, keys)));
        val = valOff.equals(MemorySegment.NULL) ? MemorySegment.NULL
                : at(p, VAL, Integer.toUnsignedLong(valOff.getAtIndex(JAVA_INT, keys)));
        keyBuf = key.byteSize() == 0 ? ByteBuffer.allocateDirect(0) : key.asByteBuffer();
    }

    /** keyBuf set to key i. */
    private ByteBuffer key(int i) {
        int s = keyOff.getAtIndex(JAVA_INT, i);
        int e = keyOff.getAtIndex(JAVA_INT, i + 1);
        keyBuf.limit(keyBuf.capacity()).position(s).limit(e);
        return keyBuf;
    }

    /** A buffer of its own for key i (a batch holds several). */
    ByteBuffer keyCopy(int i) {
        int s = keyOff.getAtIndex(JAVA_INT, i);
        int e = keyOff.getAtIndex(JAVA_INT, i + 1);
        return key.asSlice(s, e - s).asByteBuffer();
    }

    ByteBuffer value(int i) {
        int s = valOff.getAtIndex(JAVA_INT, i);
        int e = valOff.getAtIndex(JAVA_INT, i + 1);
        return e == s ? ByteBuffer.allocate(0) : val.asSlice(s, e - s).asByteBuffer();
    }

    private void times(int u, long t0, long t1) {
        b.times.setAtIndex(JAVA_LONG, 2L * u, t0);
        b.times.setAtIndex(JAVA_LONG, 2L * u + 1, t1);
    }

    /** A plain block: unit u is a get of key u. ran[0] is set to the units run; true when the
     * thread must stop. A reader of fields has its fields serialised after the timed read. */
    private boolean gets(int[] ran) {
        Engine.Reader reader = rd;
        Engine.FieldReader fields = fr;
        for (int u = 0; u < units; u++) {
            ByteBuffer k = key(u);
            long t0 = now();
            ByteBuffer v = null;
            boolean found = false;
            Throwable err = null;
            try {
                if (fields == null) {
                    v = reader.get(k);
                } else {
                    found = fields.read(k);
                }
            } catch (Throwable e) {
                err = e;
            }
            long t1 = now();
            times(u, t0, t1);
            if (found) {
                readFields(u);
            } else {
                read(u, v);
            }
            if (err != null && fail(u, err, t1)) {
                ran[0] = u + 1;
                return true;
            }
        }
        return false;
    }

    /** Reads key k and hands what it read to the core. */
    private void fetch(int k) throws Exception {
        hand(k, readKey(k));
    }

    /**
     * The engine's read of key k alone, what a get unit times: whether it found the key. The
     * value stays in the field reader, or in {@code value}, until {@link #hand}.
     */
    private boolean readKey(int k) throws Exception {
        if (fr != null) {
            return fr.read(key(k));
        }
        value = rd.get(key(k));
        return value != null;
    }

    /** Hands what readKey(k) read to the core. */
    private void hand(int k, boolean found) {
        if (fr == null) {
            read(k, value);
            value = null;
        } else if (found) {
            readFields(k);
        }
    }

    /**
     * Hands the fields fr read for key k to the core: serialised straight into the core's
     * buffer, or compared in place where the core gave the bytes it expects.
     */
    private void readFields(int k) {
        if (!exp.getAtIndex(ADDRESS, k).equals(MemorySegment.NULL)) {
            read(k, fr.serialised());
            return;
        }
        int len = fr.serialisedLength();
        room(len);
        fr.serialiseTo(gotView(len));
        gotPos += len;
        b.gotLen.setAtIndex(JAVA_INT, k, len);
    }

    /** The len bytes of got at gotPos, as a buffer. */
    private ByteBuffer gotView(int len) {
        if (got.byteSize() > Integer.MAX_VALUE) { // a buffer cannot span it: a view of the record
            return got.asSlice(gotPos, len).asByteBuffer();
        }
        if (gotBuf == null) {
            gotBuf = got.asByteBuffer();
        }
        return gotBuf.limit((int) (gotPos + len)).position((int) gotPos);
    }

    /** The core's buffer grown to hold len bytes more. */
    private void room(long len) {
        if (gotPos + len > got.byteSize()) {
            b.gotCap = Math.max(b.gotCap, Math.max(gotPos + len, 2 * got.byteSize()));
            got = gotRoom(b.gotCap);
        }
    }

    /**
     * Hands the value read for key k to the core: KVB_MATCHED when it equals the bytes the core
     * expects (compared now, in place), else a copy for the core to check.
     */
    private void read(int k, ByteBuffer v) {
        if (v == null) {
            return;
        }
        MemorySegment vs = MemorySegment.ofBuffer(v);
        long len = vs.byteSize();
        MemorySegment e = exp.getAtIndex(ADDRESS, k);
        if (!e.equals(MemorySegment.NULL)) {
            long el = Integer.toUnsignedLong(expLen.getAtIndex(JAVA_INT, k));
            long ea = e.address();
            if (el == len && MemorySegment.mismatch(vs, 0, len, ALL, ea, ea + el) == -1) {
                b.gotLen.setAtIndex(JAVA_INT, k, MATCHED);
                return;
            }
        }
        room(len);
        MemorySegment.copy(vs, 0, got, gotPos, len);
        gotPos += len;
        b.gotLen.setAtIndex(JAVA_INT, k, (int) len);
    }

    /** s grown to hold need bytes, its first keep bytes kept. */
    private MemorySegment grow(MemorySegment s, long need, long keep) {
        if (need <= s.byteSize()) {
            return s;
        }
        MemorySegment n = b.arena.allocate(Math.max(need, 2 * s.byteSize()));
        MemorySegment.copy(s, 0, n, 0, keep);
        return n;
    }

    /** The core's buffer of values read, need bytes long, the gotPos bytes written kept. */
    private MemorySegment gotRoom(long need) {
        long keep = gotPos;
        MemorySegment p = Runner.call(() -> (MemorySegment) Core.GOT.invokeExact(c, keep, need));
        if (p.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("kvb_got: no buffer for " + need + " bytes");
        }
        gotBuf = null;
        return p.reinterpret(need);
    }

    private void done(int ran) {
        MemorySegment got = gotPos == 0 ? MemorySegment.NULL : this.got;
        Runner.call(() -> {
            Core.DONE.invokeExact(c, ran, b.times, got, b.gotLen);
            return null;
        });
    }

    /**
     * Lets the reader's snapshot go before the next kvb_next when that may wait for a record
     * another thread is writing, since the write may wait for this snapshot.
     */
    private void release() {
        if (shared && units > 0 && refresh.get(JAVA_BYTE, units - 1) == 1 && rd != null) {
            try {
                rd.refresh();
            } catch (Throwable e) {
                fail(NO_UNIT, e, now());
            }
        }
    }

    private int first(int u) {
        return u == 0 ? 0 : keyEnd.getAtIndex(JAVA_INT, u - 1);
    }

    /** Runs unit u of the block; true when the thread must stop. */
    private boolean unit(int u) {
        if (refresh.get(JAVA_BYTE, u) == 1 && rd != null) {
            try {
                rd.refresh();
            } catch (Throwable e) {
                if (fail(u, e, now())) {
                    skip(u);
                    return true;
                }
            }
        }
        long d = due.getAtIndex(JAVA_LONG, u);
        if (d >= 0) {
            waitUntil(d);
        }
        int k0 = first(u);
        int k1 = keyEnd.getAtIndex(JAVA_INT, u);
        int kd = kind.get(JAVA_BYTE, u);
        Throwable err = null;
        boolean found = false;
        long t0 = now();
        try {
            if (kd == GET) {
                t0 = now();
                found = readKey(k0);
            } else if (kd == MULTI_GET) {
                t0 = now();
                for (int i = k0; i < k1; i++) {
                    fetch(i);
                }
            } else if (kd == SCAN) {
                ByteBuffer k = key(k0);
                long limit = scanLen.getAtIndex(JAVA_LONG, u);
                scanned = 0;
                t0 = now();
                try {
                    rd.scan(k, limit, this::record);
                } finally {
                    long t1 = now();
                    times(u, t0, t1);
                    flushScan();
                }
            } else if (kd == WRITE) {
                batch.set(k0, k1);
                t0 = now();
                r.eng.write(batch);
            } else if (kd == RMW) {
                batch.set(k0, k0 + 1);
                t0 = now();
                fetch(k0);
                rd.refresh();
                r.eng.write(batch);
            } else if (kd == OPEN_GET) {
                t0 = now();
                openGet(k0);
            } else { // KVB_WAIT: the wait was all
                skip(u);
                return false;
            }
        } catch (Throwable e) {
            err = e;
        }
        long t1 = now();
        if (kd != SCAN) {
            times(u, t0, t1);
        }
        if (kd == GET && err == null) {
            // The value is handed after the clock read, as a block of plain gets does.
            hand(k0, found);
        }
        return err != null && fail(u, err, b.times.getAtIndex(JAVA_LONG, 2L * u + 1));
    }

    /** The article 000 method: open the engine, read one key, close it, timed together. */
    private void openGet(int k) throws Exception {
        try (Engine e = r.desc.open().open(r.args.withMode(mode)); Engine.Reader reader = e.reader()) {
            read(k, reader.get(key(k)));
        }
    }

    /** Fills in the times of a unit that ran no engine call. */
    private void skip(int u) {
        long n = now();
        times(u, n, n);
    }

    /** Sleeps until due (ns after the start), then spins for the last 100 µs. */
    private void waitUntil(long d) {
        for (long left = d - now(); left > 0; left = d - now()) {
            if (left > SPIN_NS) {
                LockSupport.parkNanos(left - SPIN_NS);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    private long scanned;

    /** Appends a scanned record: u32le key length, key, u32le value length, value. */
    private boolean record(ByteBuffer k, ByteBuffer v) {
        MemorySegment ks = MemorySegment.ofBuffer(k);
        MemorySegment vs = MemorySegment.ofBuffer(v);
        long need = scanned + 8 + ks.byteSize() + vs.byteSize();
        b.scanned = grow(b.scanned, need, scanned);
        b.scanned.set(LE_INT, scanned, (int) ks.byteSize());
        MemorySegment.copy(ks, 0, b.scanned, scanned + 4, ks.byteSize());
        scanned += 4 + ks.byteSize();
        b.scanned.set(LE_INT, scanned, (int) vs.byteSize());
        MemorySegment.copy(vs, 0, b.scanned, scanned + 4, vs.byteSize());
        scanned += 4 + vs.byteSize();
        if (scanned >= SCAN_FLUSH) {
            flushScan();
        }
        return true;
    }

    private static final java.lang.foreign.ValueLayout.OfInt LE_INT = JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private void flushScan() {
        long n = scanned;
        MemorySegment s = b.scanned;
        Runner.call(() -> {
            Core.SCAN.invokeExact(c, s, n);
            return null;
        });
        scanned = 0;
    }

    /** The block's keys k0..k1 as one write batch. */
    private final class BlockBatch implements Engine.WriteBatch {
        private int k0, k1;

        void set(int from, int to) {
            k0 = from;
            k1 = to;
        }

        @Override
        public int size() {
            return k1 - k0;
        }

        @Override
        public ByteBuffer key(int i) {
            return keyCopy(k0 + i);
        }

        @Override
        public ByteBuffer value(int i) {
            return WorkerThread.this.value(k0 + i);
        }

        @Override
        public boolean delete(int i) {
            return del.get(JAVA_BYTE, k0 + i) == DELETE;
        }

        @Override
        public boolean merge(int i) {
            return del.get(JAVA_BYTE, k0 + i) == MERGE_FIELDS;
        }
    }
}
