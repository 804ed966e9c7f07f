package kvbench.worker;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The untimed JIT warm-up, before the job's first step: small jobs of the same dataset shape run
 * through this worker's whole path (the worker core, the thread loop, the engine's Java code and
 * the JNI or FFM stubs under it) for a stated time, on a scratch store beside the job's
 * directory, removed after, their events thrown away; so the job's steps run compiled code
 * rather than the interpreter's. The job's own store never sees it. It lasts at least the time
 * asked, then goes on while the JIT is busy (a job during which the compiler threads worked for
 * more than a quarter of its time is followed by another), up to SETTLE_CAP times the time
 * asked: a warm-up cut off mid-compilation leaves the start of a timed step to C1 code and
 * recompilations.
 */
final class Warmup {
    private Warmup() {}

    /** Records of a warm-up job. */
    static final long RECORDS = 5_000;
    /** Gets of a warm-up job. */
    static final long GETS = 20_000;
    /** The longest warm-up, as a multiple of the time asked. */
    static final long SETTLE_CAP = 5;

    /** What the warm-up did, in words, for the open step's settings. */
    static String run(Descriptor d, JsonObject job, Path jobDir, long ms) throws Exception {
        if (ms <= 0) {
            return "none";
        }
        Path parent = jobDir.toAbsolutePath().getParent();
        Path scratch = Files.createTempDirectory(parent != null && Files.isWritable(parent) ? parent
                : Path.of(System.getProperty("java.io.tmpdir")), ".kvbench-java-warmup-");
        int jobs = 0;
        long t0 = System.nanoTime();
        long asked = t0 + ms * 1_000_000L;
        long cap = t0 + SETTLE_CAP * ms * 1_000_000L;
        boolean compiling;
        int fd = Runner.call(Warmup::devNull);
        try {
            do {
                long jit = jitMs();
                long started = System.nanoTime();
                Path dir = scratch.resolve("db" + jobs);
                Files.createDirectories(dir);
                Path file = scratch.resolve("job" + jobs + ".json");
                Files.writeString(file, warmupJob(d, job, dir).toString());
                if (!Runner.run(file, fd, n -> d, 0)) {
                    return "failed (the job runs without one): see the worker's log";
                }
                remove(dir);
                jobs++;
                compiling = 4 * (jitMs() - jit) > (System.nanoTime() - started) / 1_000_000;
            } while (System.nanoTime() < asked || (compiling && System.nanoTime() < cap));
        } finally {
            Runner.call(() -> (int) Core.CLOSE.invokeExact(fd));
            remove(scratch);
        }
        long ran = (System.nanoTime() - t0) / 1_000_000;
        String scans = d.caps().scan() ? ", 200 scans" : "";
        int mirrored = mirrored(job).size();
        String what = mirrored == 1 ? "ops step that reads or updates" : mirrored + " ops steps that read or update";
        scans += mirrored == 0 ? "" : String.format(", then the job's %s loaded records, at most %d ops each, "
                + "uniform over the records and unpaced", what, GETS);
        String end = compiling ? String.format("the JIT still compiling at its cap of %d ms", SETTLE_CAP * ms)
                : "the last with the JIT compiling for under a quarter of it";
        return String.format("%d ms untimed before the job's first step: %d jobs on a scratch store through the whole "
                + "worker, each a load of %d records, %d gets%s; %s", ran, jobs, RECORDS, GETS, scans, end);
    }

    /** The JIT's compiling time so far (ms, all compiler threads); -1 when the JVM does not say. */
    private static long jitMs() {
        CompilationMXBean c = ManagementFactory.getCompilationMXBean();
        return c != null && c.isCompilationTimeMonitoringSupported() ? c.getTotalCompilationTime() : -1;
    }

    /** A job of the real job's dataset shape (or kvbench's default one) over RECORDS records. */
    static JsonObject warmupJob(Descriptor d, JsonObject job, Path dir) {
        JsonObject ds = job.getAsJsonObject("dataset").deepCopy();
        if (!ds.has("generator") || !"synthetic".equals(ds.get("generator").getAsString())) {
            ds = com.google.gson.JsonParser.parseString("{\"generator\":\"synthetic\",\"key\":{\"kind\":\"decimal\","
                    + "\"width\":16},\"value\":{\"min\":100,\"max\":100,\"content\":\"printable\"},\"ordered\":true,"
                    + "\"pool_seed\":1,\"value_seed\":2}").getAsJsonObject();
        }
        ds.addProperty("loaded", RECORDS);
        ds.addProperty("total", RECORDS);
        ds.addProperty("open_records", RECORDS);
        ds.addProperty("open_bytes", RECORDS * 200);
        JsonArray steps = new JsonArray();
        steps.add(step("open", 0));
        steps.get(0).getAsJsonObject().addProperty("mode", "read-write");
        JsonObject load = ops(1, "load", RECORDS, "shuffle");
        load.addProperty("batch", 100);
        steps.add(load);
        steps.add(ops(2, "get", GETS, "uniform"));
        if (d.caps().scan()) {
            JsonObject scan = ops(3, "scan", 200, "uniform");
            JsonObject len = new JsonObject();
            len.addProperty("min", 1);
            len.addProperty("max", 50);
            scan.add("scan", len);
            steps.add(scan);
        }
        addJobSteps(job, steps);
        steps.add(step("close", steps.size()));
        JsonObject w = job.deepCopy();
        w.addProperty("dir", dir.toString());
        w.add("dataset", ds);
        w.add("plan", com.google.gson.JsonNull.INSTANCE);
        w.add("steps", steps);
        w.addProperty("sync", "none");
        return w;
    }

    /** Op kinds a warm-up runs as the job's steps have them: none that needs records not loaded. */
    static final Set<String> MIRRORED = Set.of("get", "multi-get", "scan", "update", "delete", "rmw");

    /**
     * Adds the job's ops steps that a warm-up can run to `steps`, each at most GETS ops over the
     * warm-up's records, unpaced, without a stop rule or a background writer: the kinds and
     * mixes, threads, batches and field updates the job's steps run through the worker (a
     * mixed step's blocks, writers beside each other), which the fixed steps do not. Steps with
     * inserts, loads, replays or an open per op are left out. Returns how many were added.
     */
    static int addJobSteps(JsonObject job, JsonArray steps) {
        List<JsonObject> mirrored = mirrored(job);
        for (JsonObject s : mirrored) {
            JsonObject w = s.deepCopy();
            for (String k : List.of("rate", "duration_ms", "steady", "writer", "replay", "stop", "finish", "plan")) {
                w.remove(k);
            }
            w.addProperty("index", steps.size());
            w.addProperty("count", Math.min(GETS, s.get("count").getAsLong()));
            w.add("dist", dist("uniform"));
            w.addProperty("last", RECORDS - 1);
            steps.add(w);
        }
        return mirrored.size();
    }

    /** The job's ops steps that a warm-up can run, in order. */
    private static List<JsonObject> mirrored(JsonObject job) {
        List<JsonObject> out = new ArrayList<>();
        for (JsonElement e : job.getAsJsonArray("steps")) {
            JsonObject s = e.getAsJsonObject();
            if ("ops".equals(Runner.text(s, "step")) && mirrorable(s)) {
                out.add(s);
            }
        }
        return out;
    }

    private static boolean mirrorable(JsonObject s) {
        boolean replay = s.has("replay") && !s.get("replay").isJsonNull();
        if (replay || s.has("open_per_op") && s.get("open_per_op").getAsBoolean()) {
            return false;
        }
        String kind = Runner.text(s, "kind");
        if (!"mixed".equals(kind)) {
            return MIRRORED.contains(kind);
        }
        for (JsonElement k : s.has("kinds") ? s.getAsJsonArray("kinds") : new JsonArray()) {
            if (!MIRRORED.contains(k.getAsString())) {
                return false;
            }
        }
        return true;
    }

    private static JsonObject step(String kind, int index) {
        JsonObject s = new JsonObject();
        s.addProperty("step", kind);
        s.addProperty("index", index);
        return s;
    }

    private static JsonObject ops(int index, String kind, long count, String dist) {
        JsonObject s = step("ops", index);
        s.addProperty("name", kind);
        s.addProperty("kind", kind);
        s.addProperty("count", count);
        s.add("dist", dist(dist));
        s.addProperty("rec_seed", 11 + index);
        s.addProperty("kind_seed", 13 + index);
        s.addProperty("len_seed", 17 + index);
        s.addProperty("perm_seed", 19 + index);
        s.addProperty("last", RECORDS - 1);
        if (kind.equals("load")) {
            s.addProperty("finish", true);
        }
        return s;
    }

    /** The distribution `name` over the warm-up's records. */
    private static JsonObject dist(String name) {
        JsonObject d = new JsonObject();
        d.addProperty("name", name);
        d.addProperty("n", RECORDS);
        return d;
    }

    /** A descriptor for /dev/null: the warm-up jobs' events. */
    private static int devNull() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            return (int) Core.OPEN.invokeExact(a.allocateFrom("/dev/null"), 1 /* O_WRONLY */, 0);
        }
    }

    static void remove(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
