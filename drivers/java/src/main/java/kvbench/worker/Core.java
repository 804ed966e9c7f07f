package kvbench.worker;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * kvbench's worker core (crates/kvbench-ffi/kvbench.h) through the Foreign Function &amp; Memory
 * API: the library reads the job, derives keys, values and op streams, verifies every read, keeps
 * the histograms and writes the step events. Downcalls are "critical" where the call neither
 * blocks nor calls back, which spares the thread-state transition of an ordinary downcall.
 */
public final class Core {
    private Core() {}

    /** The library: $KVBENCH_FFI_LIB, else the checkout's target/release build, else an
     * installed copy's lib/ (scripts/install.sh). */
    static Path libraryPath() {
        String env = System.getenv("KVBENCH_FFI_LIB");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        String home = System.getProperty("kvbench.home");
        Path base = home != null ? Path.of(home) : Path.of("..", "..").toAbsolutePath().normalize();
        Path built = base.resolve("target/release/libkvbench_ffi.so");
        Path installed = base.resolve("lib/libkvbench_ffi.so");
        return Files.isRegularFile(built) || !Files.isRegularFile(installed) ? built : installed;
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIB;

    static {
        Path p = libraryPath();
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException("worker core " + p + " missing: run `make java` (or set KVBENCH_FFI_LIB)");
        }
        LIB = SymbolLookup.libraryLookup(p, Arena.global());
    }

    private static MethodHandle fn(String name, FunctionDescriptor d, boolean critical) {
        MemorySegment sym = LIB.find(name).orElseThrow(() -> new IllegalStateException("worker core lacks " + name));
        return critical ? LINKER.downcallHandle(sym, d, Linker.Option.critical(false)) : LINKER.downcallHandle(sym, d);
    }

    private static MethodHandle libc(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), d);
    }

    static final MethodHandle JOB_OPEN = fn("kvb_job_open", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT), false);
    static final MethodHandle JOB_ERROR = fn("kvb_job_error", FunctionDescriptor.of(ADDRESS, ADDRESS), false);
    static final MethodHandle JOB_FREE = fn("kvb_job_free", FunctionDescriptor.ofVoid(ADDRESS), false);
    static final MethodHandle EMIT = fn("kvb_emit", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS), false);
    static final MethodHandle STEP_BEGIN = fn("kvb_step_begin", FunctionDescriptor.of(ADDRESS, ADDRESS), false);
    static final MethodHandle STEP_END = fn("kvb_step_end", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), false);
    static final MethodHandle INTERNALS =
            fn("kvb_internals", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS), false);
    static final MethodHandle FINISH_DUE = fn("kvb_finish_due", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    static final MethodHandle PROTOCOL = fn("kvb_protocol", FunctionDescriptor.of(JAVA_INT), false);
    static final MethodHandle ABI_CONSTANT =
            fn("kvb_abi_constant", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS), false);
    static final MethodHandle THREAD_NEW =
            fn("kvb_thread_new", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT), false);
    static final MethodHandle THREAD_END = fn("kvb_thread_end", FunctionDescriptor.ofVoid(ADDRESS), false);
    /** kvb_next may wait for a record another thread writes: an ordinary downcall. */
    static final MethodHandle NEXT = fn("kvb_next", FunctionDescriptor.of(ADDRESS, ADDRESS), false);
    static final MethodHandle DONE =
            fn("kvb_done", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS), true);
    static final MethodHandle GOT =
            fn("kvb_got", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG), true);
    static final MethodHandle ERROR =
            fn("kvb_error", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), false);
    static final MethodHandle SCAN = fn("kvb_scan", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG), true);
    static final MethodHandle DUP = libc("dup", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    static final MethodHandle DUP2 = libc("dup2", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().find("open").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2));

    /** The ABI's numbers (kvbench_abi.h), asked of the library: kvb_abi_constant. */
    static final Map<String, Long> ABI = readAbi();

    private static Map<String, Long> readAbi() {
        Map<String, Long> out = new HashMap<>();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocate(ADDRESS);
            MemorySegment value = a.allocate(JAVA_LONG);
            for (long i = 0; (int) ABI_CONSTANT.invokeExact(i, name, value) == 1; i++) {
                out.put(name.get(ADDRESS, 0).reinterpret(256).getString(0), value.get(JAVA_LONG, 0));
            }
        } catch (Throwable t) {
            throw new IllegalStateException("kvb_abi_constant", t);
        }
        return out;
    }

    static int abi(String name) {
        Long v = ABI.get(name);
        if (v == null) {
            throw new IllegalStateException("the worker core does not define " + name);
        }
        return v.intValue();
    }

    // kvb_step
    static final MemoryLayout STEP = MemoryLayout.structLayout(JAVA_INT.withName("step"), JAVA_INT.withName("mode"),
            JAVA_INT.withName("threads"), JAVA_BYTE.withName("reads"), JAVA_BYTE.withName("open_per_op"),
            MemoryLayout.paddingLayout(2), JAVA_INT.withName("interval_ms"));

    // kvb_report: 3 u64, 7 pointers
    static final MemoryLayout REPORT = MemoryLayout.structLayout(JAVA_LONG.withName("wall_ns"),
            JAVA_LONG.withName("start_unix_ns"), JAVA_LONG.withName("finish_ns"), ADDRESS.withName("error"),
            ADDRESS.withName("error_kind"), ADDRESS.withName("finish_error"), ADDRESS.withName("settings"),
            ADDRESS.withName("runtime"), ADDRESS.withName("settled"), ADDRESS.withName("internals"));

    // kvb_block
    static final MemoryLayout BLOCK = MemoryLayout.structLayout(JAVA_INT.withName("units"), MemoryLayout.paddingLayout(4),
            ADDRESS.withName("kind"), ADDRESS.withName("refresh"), ADDRESS.withName("due"),
            ADDRESS.withName("key_end"), ADDRESS.withName("scan_len"), ADDRESS.withName("key"),
            ADDRESS.withName("key_off"), ADDRESS.withName("val"), ADDRESS.withName("val_off"),
            ADDRESS.withName("del"), ADDRESS.withName("exp"), ADDRESS.withName("exp_len"), JAVA_BYTE.withName("plain"),
            MemoryLayout.paddingLayout(7));

    static long off(MemoryLayout l, String field) {
        return l.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    /** A NUL-terminated string the core returned (empty for NULL). */
    static String string(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(Long.MAX_VALUE).getString(0);
    }

    static final ValueLayout.OfInt INT = JAVA_INT;
}
