package kvbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;

import kvbench.ycsb.KvbenchBinding;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `ycsb:CLASS` rows: a YCSB binding loaded by name runs kvbench's job (load, gets on two
 * threads, updates of one field, inserts, deletes, read-modify-writes, a reopen) with every
 * read verified through the binding's own read; a class that cannot run and values that are not
 * YCSB's records fail the job with the reason.
 */
class YcsbEngineTest {
    /** The every-step job's steps a YCSB binding runs (no scans), in YCSB's record shape. */
    static JsonObject job(String engine, Path tmp) throws Exception {
        JsonObject job = JsonParser.parseString(Files.readString(Path.of("../go/testdata/every-step.json")))
                .getAsJsonObject();
        Path dir = tmp.resolve("db");
        Files.createDirectories(dir);
        job.addProperty("dir", dir.toString());
        job.addProperty("engine", engine);
        job.addProperty("label", engine);
        JsonObject value = new JsonObject();
        value.addProperty("min", 100);
        value.addProperty("max", 100);
        value.addProperty("fields", 10);
        job.getAsJsonObject("dataset").add("value", value);
        job.getAsJsonObject("dataset").addProperty("open_bytes", 2600 * 1200);
        Set<String> keep = Set.of("load", "get", "update", "insert", "delete", "rmw", "get-after");
        JsonArray steps = new JsonArray();
        for (JsonElement e : job.getAsJsonArray("steps")) {
            JsonObject s = e.getAsJsonObject();
            String kind = s.get("step").getAsString();
            boolean ops = kind.equals("ops");
            boolean closed = !steps.isEmpty()
                    && steps.get(steps.size() - 1).getAsJsonObject().get("step").getAsString().equals("close");
            boolean readOnly = "read-only".equals(JobTest.text(s, "mode"));
            if ((ops && keep.contains(s.get("name").getAsString()))
                    || (!ops && !kind.equals("evict") && !readOnly && !(closed && kind.equals("close")))) {
                s.addProperty("index", steps.size());
                if (ops) {
                    // As kvbench's plan sends it to an engine with field-update.
                    s.addProperty("field_updates", true);
                }
                steps.add(s);
            }
        }
        job.add("steps", steps);
        return job;
    }

    @Test
    void kvbench_binding_by_name_runs_the_job_with_every_read_verified(@TempDir Path tmp) throws Throwable {
        String engine = "ycsb:kvbench.ycsb.KvbenchBinding";
        JsonObject job = job(engine, tmp);
        List<JsonObject> events = JobTest.run(job, tmp);
        JsonObject hello = events.get(0);
        assertTrue(hello.get("version").getAsString().startsWith("kvbench.ycsb.KvbenchBinding from "),
                hello.toString());
        long gets = 0;
        int ops = 0;
        for (JsonObject e : events) {
            if (!"step".equals(JobTest.text(e, "event"))) {
                continue;
            }
            String what = "step " + e.get("index") + " " + name(job, e);
            assertNull(JobTest.text(e, "error"), what);
            assertEquals(0, JobTest.num(e, "errors"), what + ": " + JobTest.text(e, "first_error"));
            assertEquals(0, JobTest.num(e, "mismatches"), what);
            assertEquals(0, JobTest.num(e, "missing"), what);
            if ("ops".equals(JobTest.text(e, "step"))) {
                ops++;
                gets += name(job, e).startsWith("get") ? JobTest.num(e, "ops") : 0;
            }
        }
        assertEquals(7, ops);
        assertEquals(4000, gets);
        JsonObject open = events.stream().filter(e -> "open".equals(JobTest.text(e, "step"))).findFirst()
                .orElseThrow();
        assertTrue(open.getAsJsonObject("settings").get("properties").getAsString().contains("kvbench.dir="),
                open.toString());
    }

    /**
     * Keeps the job's first four steps that are unnamed (open, prepare) or named load or
     * {@code ops}, indexed again; returns the step named {@code ops}.
     */
    static JsonObject loadThen(JsonObject job, String ops) {
        JsonArray steps = new JsonArray();
        for (JsonElement e : job.getAsJsonArray("steps")) {
            String name = JobTest.text(e.getAsJsonObject(), "name");
            if (steps.size() < 4 && (name == null || name.equals("load") || name.equals(ops))) {
                e.getAsJsonObject().addProperty("index", steps.size());
                steps.add(e);
            }
        }
        job.add("steps", steps);
        return steps.asList().stream().map(JsonElement::getAsJsonObject)
                .filter(st -> ops.equals(JobTest.text(st, "name"))).findFirst().orElseThrow();
    }

    /** The event that reports the end of the job's step named {@code name}. */
    static JsonObject stepEvent(List<JsonObject> events, JsonObject job, String name) {
        return events.stream().filter(e -> "step".equals(JobTest.text(e, "event")) && name.equals(name(job, e)))
                .findFirst().orElseThrow();
    }

    /** The job's name of the step an event reports ("" for steps without one). */
    static String name(JsonObject job, JsonObject event) {
        JsonObject step = job.getAsJsonArray("steps").get(event.get("index").getAsInt()).getAsJsonObject();
        String n = JobTest.text(step, "name");
        return n == null ? "" : n;
    }

    /** kvbench's binding behind a binding of another class: each call handed on. */
    public static class Wrapping extends DB {
        final KvbenchBinding inner = new KvbenchBinding();

        @Override
        public void init() throws DBException {
            inner.setProperties(getProperties());
            inner.init();
        }

        @Override
        public void cleanup() throws DBException {
            inner.cleanup();
        }

        @Override
        public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
            return inner.read(table, key, fields, result);
        }

        @Override
        public Status scan(String table, String start, int n, Set<String> fields,
                Vector<HashMap<String, ByteIterator>> result) {
            return inner.scan(table, start, n, fields, result);
        }

        @Override
        public Status update(String table, String key, Map<String, ByteIterator> values) {
            return inner.update(table, key, values);
        }

        @Override
        public Status insert(String table, String key, Map<String, ByteIterator> values) {
            return inner.insert(table, key, values);
        }

        @Override
        public Status delete(String table, String key) {
            return inner.delete(table, key);
        }
    }

    /** kvbench's binding with one byte of field3 changed on every read. */
    public static final class Corrupting extends Wrapping {
        @Override
        public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
            Status s = inner.read(table, key, fields, result);
            if (s.isOk()) {
                byte[] f = result.get("field3").toArray();
                f[0] ^= 1;
                result.put("field3", new ByteArrayByteIterator(f));
            }
            return s;
        }
    }

    @Test
    void a_binding_that_reads_a_wrong_field_is_counted_a_mismatch(@TempDir Path tmp) throws Throwable {
        JsonObject job = job("ycsb:" + Corrupting.class.getName(), tmp);
        loadThen(job, "get");
        JsonObject get = stepEvent(JobTest.run(job, tmp), job, "get");
        assertEquals(2000, JobTest.num(get, "ops"));
        assertEquals(2000, JobTest.num(get, "mismatches"), get.toString());
    }

    /**
     * kvbench's binding, counting the updates it is given and their fields; with the property
     * {@code updating.lose} its update writes nothing and says OK.
     */
    public static final class Updating extends Wrapping {
        static final AtomicLong UPDATES = new AtomicLong();
        static final AtomicLong FIELDS = new AtomicLong();
        /** The job's store: the updates counted are its own (the JIT warm-up updates a scratch store). */
        static volatile String dir;

        @Override
        public Status update(String table, String key, Map<String, ByteIterator> values) {
            if (getProperties().getProperty("kvbench.dir", "").equals(dir)) {
                UPDATES.incrementAndGet();
                FIELDS.addAndGet(values.size());
            }
            boolean lose = Boolean.parseBoolean(getProperties().getProperty("updating.lose"));
            return lose ? Status.OK : inner.update(table, key, values);
        }
    }

    /**
     * kvbench's binding whose fields read from the store in {@code dir} are slow to copy out
     * (each field's toArray sleeps 2 ms, counted): what the worker does with a value after the
     * engine's read. (The worker's JIT warm-up reads a scratch store of its own.)
     */
    public static final class SlowToCopy extends Wrapping {
        static final AtomicLong SLEPT_NS = new AtomicLong();
        static volatile String dir;

        @Override
        public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
            Status s = inner.read(table, key, fields, result);
            if (getProperties().getProperty("kvbench.dir", "").equals(dir)) {
                result.replaceAll((name, v) -> new Slow(v.toArray()));
            }
            return s;
        }

        static final class Slow extends ByteIterator {
            private final byte[] b;
            private int at;

            Slow(byte[] b) {
                this.b = b;
            }

            @Override
            public boolean hasNext() {
                return at < b.length;
            }

            @Override
            public byte nextByte() {
                return b[at++];
            }

            @Override
            public long bytesLeft() {
                return b.length - at;
            }

            @Override
            public byte[] toArray() {
                long t = System.nanoTime();
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                SLEPT_NS.addAndGet(System.nanoTime() - t);
                at = b.length;
                return b;
            }
        }
    }

    /**
     * A get among updates (a general block, not a block of plain gets) is timed around the
     * binding's read alone: its fields are put into the core's buffer for the check after the
     * clock read, as the gets of a plain block and the Go worker's are. The step's busy time
     * (the sum of its units' times) then holds none of the copying.
     */
    @Test
    void regression_a_get_among_updates_is_timed_without_handing_its_value(@TempDir Path tmp) throws Throwable {
        JsonObject job = job("ycsb:" + SlowToCopy.class.getName(), tmp);
        JsonObject s = loadThen(job, "update");
        s.addProperty("kind", "mixed");
        s.addProperty("count", 40);
        JsonArray kinds = new JsonArray();
        kinds.add("get");
        kinds.add("update");
        s.add("kinds", kinds);
        JsonArray thresholds = new JsonArray();
        thresholds.add(new java.math.BigInteger("9223372036854775808"));
        thresholds.add(new java.math.BigInteger("18446744073709551615"));
        s.add("thresholds", thresholds);
        SlowToCopy.SLEPT_NS.set(0);
        SlowToCopy.dir = tmp.resolve("db").toAbsolutePath().toString();
        JsonObject mixed = stepEvent(JobTest.run(job, tmp), job, "update");
        assertEquals(0, JobTest.num(mixed, "mismatches") + JobTest.num(mixed, "missing"), mixed.toString());
        long slept = SlowToCopy.SLEPT_NS.get();
        assertTrue(slept > 50_000_000L, "the gets copied their fields: " + slept + " ns");
        long busy = JobTest.num(mixed, "busy_ns");
        assertTrue(busy < slept / 4, "busy " + busy + " ns of " + slept + " ns spent copying");
    }

    /** Mismatched and missing reads of every step of a run. */
    static long wrong(List<JsonObject> events) {
        return events.stream().filter(e -> "step".equals(JobTest.text(e, "event")))
                .mapToLong(e -> JobTest.num(e, "mismatches") + JobTest.num(e, "missing")).sum();
    }

    @Test
    void regression_an_update_of_one_field_is_the_bindings_update_with_that_field(@TempDir Path tmp)
            throws Throwable {
        JsonObject job = job("ycsb:" + Updating.class.getName(), tmp);
        Updating.UPDATES.set(0);
        Updating.FIELDS.set(0);
        Updating.dir = tmp.resolve("db").toAbsolutePath().toString();
        List<JsonObject> events = JobTest.run(job, tmp);
        assertEquals(500, Updating.UPDATES.get(), "the update step's 500 updates, each the binding's update");
        assertEquals(500, Updating.FIELDS.get(), "one field each");
        assertEquals(0, wrong(events), "every later read finds the field merged in");
    }

    @Test
    void a_binding_whose_update_loses_the_field_is_caught_by_later_reads(@TempDir Path tmp) throws Throwable {
        JsonObject job = job("ycsb:" + Updating.class.getName(), tmp);
        JsonObject options = new JsonObject();
        options.addProperty("updating.lose", "true");
        job.add("options", options);
        List<JsonObject> events = JobTest.run(job, tmp);
        assertTrue(wrong(events) > 0, "reads after the lost updates must mismatch");
    }

    static String failure(String engine, JsonObject job, Path tmp) throws Throwable {
        job.addProperty("engine", engine);
        List<JsonObject> events = JobTest.events(job, tmp);
        JsonObject last = events.get(events.size() - 1);
        assertEquals("error", last.get("event").getAsString(), last.toString());
        return last.get("message").getAsString();
    }

    @Test
    void a_class_that_is_no_binding_fails_its_job_with_the_reason(@TempDir Path tmp) throws Throwable {
        JsonObject job = job("x", tmp);
        String m = failure("ycsb:no.such.Binding", job, tmp);
        assertTrue(m.contains("class no.such.Binding not found") && m.contains("--classpath"), m);
        m = failure("ycsb:java.lang.String", job, tmp);
        assertTrue(m.contains("java.lang.String is not a YCSB binding"), m);
        m = failure("ycsb:not a class", job, tmp);
        assertTrue(m.contains("is no Java class name"), m);
    }

    @Test
    void plain_values_are_refused_as_not_ycsb_records(@TempDir Path tmp) throws Throwable {
        JsonObject job = job("x", tmp);
        JsonObject plain = new JsonObject();
        plain.addProperty("min", 1000);
        plain.addProperty("max", 1000);
        job.getAsJsonObject("dataset").add("value", plain);
        String m = failure("ycsb:kvbench.ycsb.KvbenchBinding", job, tmp);
        assertTrue(m.contains("values must be fields"), m);
    }
}
