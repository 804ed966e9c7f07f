package kvbench.bench;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.lmdbjava.Dbi;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The minimal loop: COUNT random gets on lmdbjava over the environment the Java worker loaded,
 * the keys of the worker's get step (uniform, rec_seed 7: the same record stream, derived as
 * kvbench-plan derives it), each get timed with two clock reads and its time stored, each value
 * read whole (as a caller using it would; the worker compares it with the expected bytes). One
 * invocation is the whole pass (SingleShotTime): its score is the pass's time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class LmdbGet {
    @Param("")
    public String db;
    @Param("200000")
    public long records;
    @Param("2000000")
    public int count;

    private Env<ByteBuffer> env;
    private Dbi<ByteBuffer> dbi;
    private Txn<ByteBuffer> txn;
    private ByteBuffer keys;
    private long[] times;

    /** kvbench-plan's uniform record: splitmix64 of the op index, scaled to n (multiply-high). */
    static long record(long seed, long k, long n) {
        long z = seed + (k + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return Math.unsignedMultiplyHigh(z ^ (z >>> 31), n);
    }

    @Setup(Level.Trial)
    public void open() {
        env = Env.create().setMaxReaders(8).open(new File(db), EnvFlags.MDB_NOSUBDIR, EnvFlags.MDB_RDONLY_ENV,
                EnvFlags.MDB_NOTLS, EnvFlags.MDB_NORDAHEAD);
        dbi = env.openDbi((byte[]) null);
        txn = env.txnRead();
        keys = ByteBuffer.allocateDirect(16 * count);
        for (int i = 0; i < count; i++) {
            keys.put(String.format("%016d", record(7, i, records)).getBytes());
        }
        times = new long[2 * count];
    }

    @TearDown(Level.Trial)
    public void close() {
        txn.close();
        env.close();
    }

    /** The process's CPU time (all threads: JIT, GC), as the worker's step usage counts it. */
    private static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private long cpu0;

    @Setup(Level.Iteration)
    public void cpuBefore() {
        cpu0 = cpuNs();
    }

    /** Each pass's CPU time, for bench/java-overhead.sh's ops per CPU second. */
    @TearDown(Level.Iteration)
    public void cpuAfter() {
        System.out.println("pass cpu_ns " + (cpuNs() - cpu0));
    }

    @Benchmark
    public long gets() {
        long sum = 0;
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            ByteBuffer k = keys.slice(16 * i, 16);
            long t0 = System.nanoTime() - start;
            ByteBuffer v = dbi.get(txn, k);
            long t1 = System.nanoTime() - start;
            times[2 * i] = t0;
            times[2 * i + 1] = t1;
            if (v == null) {
                throw new IllegalStateException("record " + record(7, i, records) + " missing");
            }
            for (int j = v.position(); j < v.limit(); j++) {
                sum += v.get(j);
            }
        }
        return sum;
    }
}
