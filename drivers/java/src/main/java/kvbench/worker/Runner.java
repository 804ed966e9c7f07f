package kvbench.worker;

import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.ToNumberPolicy;
import com.google.gson.GsonBuilder;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;

import kvbench.ycsb.YcsbEngine;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Runs one job's steps as the worker core hands them out (the Go worker's core.go). */
public final class Runner {
    /** Version of the Java worker. */
    public static final String VERSION = "0.1.0";

    static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeSpecialFloatingPointValues()
            .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE).create();

    static final int END = Core.abi("KVB_END");
    static final int OPEN = Core.abi("KVB_OPEN");
    static final int PREPARE = Core.abi("KVB_PREPARE");
    static final int CLOSE = Core.abi("KVB_CLOSE");
    static final int OPS = Core.abi("KVB_OPS");
    static final int SETTLE = Core.abi("KVB_SETTLE");
    static final Map<Integer, String> MODES = Map.of(Core.abi("KVB_READ_WRITE"), "read-write",
            Core.abi("KVB_READ_ONLY"), "read-only", Core.abi("KVB_SECONDARY"), "secondary");

    final MemorySegment job;
    Descriptor desc;
    OpenArgs args;
    Engine eng;
    /** Per thread, kept from one ops step to the next: what a step allocates is the engine's. */
    final List<WorkerThread.Buffers> bufs = new ArrayList<>();
    final Jvm jvm = new Jvm();
    /** What the untimed warm-up did, for the open step's settings. */
    private String warmup;

    private Runner(MemorySegment job) {
        this.job = job;
    }

    /** A step's outcome before it goes to kvb_step_end. */
    static final class Report {
        long wallNs, finishNs, startUnixNs;
        String err, kind, finishErr, settled;
        Map<String, String> settings;
        Map<String, Double> runtime = new TreeMap<>();
        Map<String, Double> internals;

        void fail(Throwable t) {
            err = message(t);
            kind = kindOf(t);
        }
    }

    static String message(Throwable t) {
        String m = t.getMessage();
        return m == null || m.isEmpty() ? t.getClass().getName() : m;
    }

    static String kindOf(Throwable t) {
        return t instanceof Engine.Unsupported ? "unsupported" : "store";
    }

    /**
     * Runs the job file at path on the engine find returns for its name, writing the events on
     * file descriptor fd; false after an error event. warmupMs: the untimed warm-up's length.
     */
    public static boolean run(Path path, int fd, Function<String, Descriptor> find, long warmupMs) {
        MemorySegment job;
        try (Arena a = Arena.ofConfined()) {
            job = (MemorySegment) Core.JOB_OPEN.invokeExact(a.allocateFrom(path.toString()), fd);
        } catch (Throwable t) {
            throw new IllegalStateException("kvb_job_open", t);
        }
        Runner r = new Runner(job);
        try {
            String err = Core.string(call(() -> (MemorySegment) Core.JOB_ERROR.invokeExact(job)));
            if (!err.isEmpty()) {
                return r.fail(err);
            }
            r.start(path, find, warmupMs);
            for (MemorySegment s = r.stepBegin(); s.get(JAVA_INT, 0) != END; s = r.stepBegin()) {
                if (r.step(s)) {
                    break;
                }
            }
            if (r.eng != null) {
                r.eng.close();
            }
            r.emit(Map.of("event", "done"));
            return true;
        } catch (Throwable t) {
            StringWriter w = new StringWriter();
            t.printStackTrace(new PrintWriter(w));
            System.err.print(w);
            return r.fail("java worker: " + message(t));
        } finally {
            r.jvm.close();
            call(() -> {
                Core.JOB_FREE.invokeExact(job);
                return null;
            });
        }
    }

    interface Call<T> {
        T call() throws Throwable;
    }

    /** A downcall: the core's own failures are bugs, not engine errors. */
    static <T> T call(Call<T> c) {
        try {
            return c.call();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private MemorySegment stepBegin() {
        MemorySegment s = call(() -> (MemorySegment) Core.STEP_BEGIN.invokeExact(job));
        return s.reinterpret(Core.STEP.byteSize());
    }

    /** Finds the engine, warms up, and emits hello. */
    private void start(Path path, Function<String, Descriptor> find, long warmupMs) throws Exception {
        JsonObject j = JsonParser.parseString(Files.readString(path)).getAsJsonObject();
        String engine = j.get("engine").getAsString();
        desc = find.apply(engine);
        if (desc == null) {
            throw new IllegalArgumentException("engine " + engine + " is not a Java engine (see --list)");
        }
        String why = desc.unavailable().get();
        if (why != null) {
            throw new IllegalArgumentException("engine " + engine + " unavailable: " + why);
        }
        if (engine.startsWith(YcsbEngine.PREFIX)) {
            YcsbEngine.checkJob(engine, j);
        }
        Map<String, Object> opts = readOptions(j.getAsJsonObject("options"));
        JsonObject ds = j.getAsJsonObject("dataset");
        args = new OpenArgs(Path.of(j.get("dir").getAsString()), opts, j.get("sync").getAsString(), "read-write",
                ds.has("open_records") ? ds.get("open_records").getAsLong() : 0,
                ds.has("open_bytes") ? ds.get("open_bytes").getAsLong() : 0, text(j, "url"), text(j, "token"));
        warmup = Warmup.run(desc, j, args.dir(), warmupMs);
        Map<String, Object> effective = new TreeMap<>();
        opts.forEach((k, v) -> {
            if (v != null) {
                effective.put(k, v);
            }
        });
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("event", "hello");
        hello.put("protocol", call(() -> (int) Core.PROTOCOL.invokeExact()));
        hello.put("engine", desc.name());
        hello.put("worker", "java kvbench-java-worker " + VERSION + " (" + Jvm.describe() + ")");
        hello.put("version", desc.version().get());
        hello.put("capabilities", desc.caps().names());
        hello.put("options", effective);
        hello.put("timer_overhead_ns", calibrateTimer());
        emit(hello);
    }

    static String text(JsonObject j, String k) {
        JsonElement e = j.get(k);
        return e == null || e.isJsonNull() ? "" : e.getAsString();
    }

    /** The job's options; a value that is not null, a boolean, an integer or a string means
     * the job was not resolved by kvbench. */
    static Map<String, Object> readOptions(JsonObject o) {
        Map<String, Object> out = new TreeMap<>();
        if (o == null) {
            return out;
        }
        for (var e : o.entrySet()) {
            JsonElement v = e.getValue();
            Object val;
            if (v.isJsonNull()) {
                val = null;
            } else if (v.isJsonPrimitive() && v.getAsJsonPrimitive().isBoolean()) {
                val = v.getAsBoolean();
            } else if (v.isJsonPrimitive() && v.getAsJsonPrimitive().isString()) {
                val = v.getAsString();
            } else if (v.isJsonPrimitive() && v.getAsJsonPrimitive().isNumber() && isInteger(v.getAsString())) {
                val = v.getAsLong();
            } else {
                throw new IllegalArgumentException("job option `" + e.getKey() + "` = " + v
                        + ": kvbench writes null, true/false, integers or strings");
            }
            out.put(e.getKey(), val);
        }
        return out;
    }

    private static boolean isInteger(String s) {
        try {
            Long.parseLong(s);
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** Writes one event among the core's. */
    void emit(Object ev) {
        String text = GSON.toJson(ev);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocateFrom(text);
            call(() -> {
                Core.EMIT.invokeExact(job, cs);
                return null;
            });
        }
    }

    private boolean fail(String msg) {
        emit(Map.of("event", "error", "message", msg));
        return false;
    }

    /** Runs one step and reports it; true when the job stops here. */
    private boolean step(MemorySegment s) {
        Report rep = new Report();
        int kind = s.get(JAVA_INT, 0);
        Jvm.Mark m0 = jvm.mark();
        long t0 = System.nanoTime();
        if (kind == OPEN) {
            open(MODES.get(s.get(JAVA_INT, 4)), rep);
        } else if (kind == PREPARE) {
            prepare(rep);
        } else if (kind == CLOSE) {
            close(rep);
        } else if (kind == SETTLE) {
            settle(rep);
        } else if (kind == OPS) {
            m0 = ops(s, rep);
        }
        if (kind != OPS) {
            rep.wallNs = System.nanoTime() - t0;
        }
        jvm.report(m0, rep.runtime);
        if (eng != null) {
            rep.internals = eng.internals();
        }
        return end(rep);
    }

    private void open(String mode, Report rep) {
        if (eng != null) {
            rep.fail(new IllegalStateException("the engine is already open"));
            return;
        }
        try {
            eng = desc.open().open(args.withMode(mode));
            rep.settings = new TreeMap<>(eng.settings());
            rep.settings.putAll(Jvm.settings());
            rep.settings.put("jvm.warmup", warmup);
        } catch (Throwable t) {
            rep.fail(t);
        }
    }

    private void prepare(Report rep) {
        if (eng == null) {
            rep.fail(new IllegalStateException("prepare: the engine is not open"));
            return;
        }
        try {
            eng.prepare();
            rep.settings = eng.settings();
        } catch (Throwable t) {
            rep.fail(t);
        }
    }

    private void close(Report rep) {
        if (eng == null) {
            rep.fail(new IllegalStateException("close: the engine is not open"));
            return;
        }
        try {
            Engine e = eng;
            eng = null;
            e.close();
        } catch (Throwable t) {
            rep.fail(t);
        }
    }

    private void settle(Report rep) {
        if (eng == null) {
            rep.fail(new IllegalStateException("settle: the engine is not open"));
            return;
        }
        try {
            rep.settled = eng.settle();
        } catch (Throwable t) {
            rep.fail(t);
        }
    }

    /** Hands the step's report to the core; true when the job stops here. */
    private boolean end(Report rep) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = a.allocate(Core.REPORT);
            c.set(JAVA_LONG, Core.off(Core.REPORT, "wall_ns"), rep.wallNs);
            c.set(JAVA_LONG, Core.off(Core.REPORT, "start_unix_ns"), rep.startUnixNs);
            c.set(JAVA_LONG, Core.off(Core.REPORT, "finish_ns"), rep.finishNs);
            str(a, c, "error", rep.err);
            str(a, c, "error_kind", rep.kind);
            str(a, c, "finish_error", rep.finishErr);
            str(a, c, "settled", rep.settled);
            str(a, c, "runtime", GSON.toJson(rep.runtime));
            if (rep.settings != null) {
                str(a, c, "settings", GSON.toJson(rep.settings));
            }
            if (rep.internals != null && !rep.internals.isEmpty()) {
                str(a, c, "internals", GSON.toJson(rep.internals));
            }
            return call(() -> (int) Core.STEP_END.invokeExact(job, c)) == 1;
        }
    }

    private static void str(Arena a, MemorySegment c, String field, String s) {
        c.set(ADDRESS, Core.off(Core.REPORT, field), s == null || s.isEmpty() ? MemorySegment.NULL : a.allocateFrom(s));
    }

    /** Runs an ops step: its threads start before the clock and wait for the gate. Returns the
     * JVM's counters at the start. */
    private Jvm.Mark ops(MemorySegment s, Report rep) {
        int n = s.get(JAVA_INT, 8);
        boolean reads = s.get(JAVA_BYTE, 12) == 1;
        boolean openPerOp = s.get(JAVA_BYTE, 13) == 1;
        long intervalMs = Integer.toUnsignedLong(s.get(JAVA_INT, 16));
        String mode = MODES.get(s.get(JAVA_INT, 4));
        List<WorkerThread> threads = new ArrayList<>();
        for (int t = 0; t < n; t++) {
            while (bufs.size() <= t) {
                bufs.add(new WorkerThread.Buffers());
            }
            threads.add(new WorkerThread(this, bufs.get(t), t, n > 1, reads, openPerOp, mode));
        }
        CountDownLatch gate = new CountDownLatch(1);
        List<Thread> running = new ArrayList<>();
        for (WorkerThread th : threads) {
            Thread t = new Thread(() -> {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                th.run();
            }, "kvbench-ops-" + running.size());
            t.start();
            running.add(t);
        }
        Jvm.Mark m0 = jvm.mark();
        long start = System.nanoTime();
        long startUnix = System.currentTimeMillis() * 1_000_000L;
        for (WorkerThread th : threads) {
            th.start = start;
        }
        Sampler sampler = new Sampler(this, intervalMs, start);
        gate.countDown();
        for (Thread t : running) {
            joinQuietly(t);
        }
        sampler.stop();
        if (call(() -> (int) Core.FINISH_DUE.invokeExact(job)) == 1) {
            long t0 = System.nanoTime();
            try {
                eng.finishLoad();
            } catch (Throwable t) {
                rep.finishErr = message(t);
            }
            rep.finishNs = System.nanoTime() - t0;
        }
        rep.wallNs = System.nanoTime() - start;
        rep.startUnixNs = startUnix;
        return m0;
    }

    static void joinQuietly(Thread t) {
        while (true) {
            try {
                t.join();
                return;
            } catch (InterruptedException e) {
                // the worker is never interrupted on purpose: wait on
            }
        }
    }

    /** Hands the core one sample of the engine's internals and the JVM's counters. */
    void handIn(Map<String, Double> values, long tNs) {
        if (values.isEmpty()) {
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocateFrom(GSON.toJson(values));
            call(() -> {
                Core.INTERNALS.invokeExact(job, tNs, cs);
                return null;
            });
        }
    }

    /** The mean cost (ns) of what the op loop adds to each call: two clock reads and storing
     * them, over 200 000 iterations. */
    static double calibrateTimer() {
        final int n = 200_000;
        long[] times = new long[512];
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            int j = 2 * (i & 255);
            times[j] = System.nanoTime() - start;
            times[j + 1] = System.nanoTime() - start;
        }
        return (double) (System.nanoTime() - start) / n;
    }
}
