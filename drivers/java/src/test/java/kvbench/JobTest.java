package kvbench;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import kvbench.engines.Registry;
import kvbench.worker.Descriptor;
import kvbench.worker.Runner;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Go worker's job file that covers every step and op kind (drivers/go/testdata/every-step.json:
 * load, get on 2 threads, multi-get, scan, update, insert, delete, mixed, read-modify-write,
 * reopen, evict, read-only and open-per-operation reads), run through the worker core on every
 * Java engine: every step succeeds and every read the core verified matched.
 */
class JobTest {
    static Stream<Descriptor> engines() {
        return Registry.ALL.stream();
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().find("open").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    /** Runs the job in this process, its events into a file; returns the event lines. */
    static List<JsonObject> run(JsonObject job, Path tmp) throws Throwable {
        List<JsonObject> out = events(job, tmp);
        assertTrue(out.get(out.size() - 1).get("event").getAsString().equals("done"),
                "job failed: " + out.get(out.size() - 1));
        return out;
    }

    /** Runs the job in this process, its events into a file; returns the event lines, the last
     * an error when the job failed. */
    static List<JsonObject> events(JsonObject job, Path tmp) throws Throwable {
        Path jobFile = tmp.resolve("job.json");
        Files.writeString(jobFile, job.toString());
        Path events = tmp.resolve("events.jsonl");
        int fd;
        try (Arena a = Arena.ofConfined()) {
            // O_WRONLY | O_CREAT | O_TRUNC
            fd = (int) OPEN.invokeExact(a.allocateFrom(events.toString()), 01 | 0100 | 01000, 0644);
        }
        assertTrue(fd >= 0, "open " + events);
        boolean ok = Runner.run(jobFile, fd, Registry::find, 50);
        int ignored = (int) CLOSE.invokeExact(fd);
        List<JsonObject> out = Files.readAllLines(events).stream().map(l -> JsonParser.parseString(l).getAsJsonObject())
                .toList();
        assertEquals(ok, out.get(out.size() - 1).get("event").getAsString().equals("done"), "exit status and events");
        return out;
    }

    @ParameterizedTest
    @MethodSource("engines")
    void every_step_and_op_kind_runs_with_every_read_verified(Descriptor d, @TempDir Path tmp) throws Throwable {
        JsonObject job = JsonParser.parseString(Files.readString(Path.of("../go/testdata/every-step.json")))
                .getAsJsonObject();
        Path dir = tmp.resolve("db");
        Files.createDirectories(dir);
        job.addProperty("dir", dir.toString());
        job.addProperty("engine", d.name());
        job.addProperty("label", d.name());
        // Opening RocksDB or JE costs tens of milliseconds: five opens per read show the method.
        for (JsonElement s : job.getAsJsonArray("steps")) {
            if (s.getAsJsonObject().has("open_per_op")) {
                s.getAsJsonObject().addProperty("count", 5);
            }
        }
        if (!d.caps().scan()) {
            withoutScans(job);
        }
        List<JsonObject> events = run(job, tmp);
        assertEquals("hello", events.get(0).get("event").getAsString());
        assertEquals("done", events.get(events.size() - 1).get("event").getAsString());
        int steps = 0;
        for (JsonObject e : events) {
            if (!e.get("event").getAsString().equals("step")) {
                continue;
            }
            steps++;
            String what = d.name() + " step " + e.get("index") + " " + e.get("step") + " " + e.get("name");
            assertNull(text(e, "error"), what);
            assertEquals(0, num(e, "errors"), what + ": " + text(e, "first_error"));
            assertEquals(0, num(e, "mismatches"), what);
            if (d.caps().persistent()) {
                assertEquals(0, num(e, "missing"), what);
            }
            if (e.get("step").getAsString().equals("ops")) {
                assertTrue(num(e, "ops") > 0, what + ": no ops");
                assertTrue(e.getAsJsonObject("runtime").has("gc_pauses"), what + ": GC pauses");
            }
        }
        assertEquals(d.caps().scan() ? 24 : 22, steps, d.name());
        JsonObject open = events.stream().filter(e -> "open".equals(text(e, "step"))).findFirst().orElseThrow();
        String warmup = open.getAsJsonObject("settings").get("jvm.warmup").getAsString();
        long ranMs = Long.parseLong(warmup.substring(0, warmup.indexOf(' ')));
        assertTrue(ranMs >= 50 && warmup.contains("jobs on a scratch store through the whole worker"), warmup);
        // It goes on while the JIT is busy, up to five times the time asked (50 ms), and says which ended it.
        assertTrue(warmup.endsWith("the JIT still compiling at its cap of 250 ms")
                || warmup.endsWith("the last with the JIT compiling for under a quarter of it"), warmup);
    }

    /**
     * The job as kvbench plans it for an engine without ordered scans: no scan steps, and a
     * mixed step's scans are gets (both read only, so every later step expects the same records).
     */
    static void withoutScans(JsonObject job) {
        com.google.gson.JsonArray kept = new com.google.gson.JsonArray();
        for (JsonElement e : job.getAsJsonArray("steps")) {
            JsonObject s = e.getAsJsonObject();
            if ("scan".equals(text(s, "kind"))) {
                continue;
            }
            if (s.has("kinds")) {
                com.google.gson.JsonArray kinds = new com.google.gson.JsonArray();
                s.getAsJsonArray("kinds").forEach(k -> kinds.add(k.getAsString().equals("scan") ? "get" : k.getAsString()));
                s.add("kinds", kinds);
            }
            s.addProperty("index", kept.size());
            kept.add(s);
        }
        job.add("steps", kept);
    }

    static String text(JsonObject e, String k) {
        JsonElement v = e.get(k);
        return v == null || v.isJsonNull() ? null : v.getAsString();
    }

    static long num(JsonObject e, String k) {
        JsonElement v = e.get(k);
        return v == null || v.isJsonNull() ? 0 : v.getAsLong();
    }
}
