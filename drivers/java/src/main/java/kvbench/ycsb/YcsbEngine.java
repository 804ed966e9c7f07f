package kvbench.ycsb;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Engine;
import kvbench.worker.Engine.FieldReader;
import kvbench.worker.OpenArgs;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;

/**
 * {@code ycsb:CLASS}: any YCSB binding (a {@code site.ycsb.DB}) as a kvbench engine, loaded by
 * name from the worker's classpath or {@code $KVBENCH_YCSB_CLASSPATH} (kvbench's
 * {@code --classpath}); docs/decisions.md, "YCSB bindings as engines".
 *
 * <p>Records are YCSB's: the plan's values must be fields ({@code dataset.value.fields}), which
 * kvbench serialises as YCSB's RocksDB binding does; a put hands the binding those fields
 * ({@code insert}), a get reads every field ({@code read}), which the worker serialises back
 * in field order after the timed call for the core to check field by field, a delete is
 * {@code delete}. An update of one field is the binding's {@code update} with that field, as
 * YCSB's Client calls it (the engine has the capability field-update): the binding merges it
 * in, and every later read of the record checks the merged record. YCSB's {@code scan}
 * returns records without their keys, which kvbench cannot verify: no scans.
 *
 * <p>Properties: the row's options, each as a string, {@code {dir}} in a value replaced by the
 * row's directory; {@code kvbench.dir} and {@code kvbench.sync} (read by
 * {@link KvbenchBinding}) and the directory property of the bindings named in
 * {@link #DIR_PROPERTY} are set unless given. As YCSB's Client does, each thread has its own
 * DB instance ({@code init} on its first call, {@code cleanup} at its end); one more, opened
 * first and closed last, holds the store open between steps.
 */
public final class YcsbEngine implements Engine {
    /** Engine names of YCSB bindings start with it. */
    public static final String PREFIX = "ycsb:";
    /** The table YCSB's CoreWorkload names unless a `table` property says otherwise. */
    static final String TABLE = "usertable";
    /** Where the YCSB bindings that store in a directory read it. */
    static final Map<String, String> DIR_PROPERTY = Map.of("site.ycsb.db.rocksdb.RocksDBClient", "rocksdb.dir");

    private static final Map<String, Descriptor> KNOWN = new ConcurrentHashMap<>();

    /** The descriptor of engine `name` (ycsb:CLASS), or null when it has not the prefix. */
    public static Descriptor find(String name) {
        if (!name.startsWith(PREFIX)) {
            return null;
        }
        return KNOWN.computeIfAbsent(name, YcsbEngine::describe);
    }

    /** The class, or why it cannot run, found once. */
    private record Found(Class<? extends DB> cls, String why) {}

    private static Descriptor describe(String name) {
        Found f = load(name.substring(PREFIX.length()));
        return new Descriptor(name, "a YCSB binding (site.ycsb.DB) loaded by name: YCSB's records, every read "
                + "verified through the binding's own read", new Descriptor.Caps(false, false, false, false, false,
                        true, false, true, true),
                List.of(), () -> version(f), f::why, a -> new YcsbEngine(f.cls(), a));
    }

    private static Found load(String cls) {
        if (!cls.matches("[A-Za-z_$][\\w$]*(\\.[A-Za-z_$][\\w$]*)*")) {
            return new Found(null, "`" + cls + "` is no Java class name (ycsb:CLASS, e.g. "
                    + "ycsb:site.ycsb.db.rocksdb.RocksDBClient)");
        }
        String cp = System.getenv(BindingLoader.ENV);
        try {
            ClassLoader parent = YcsbEngine.class.getClassLoader();
            ClassLoader loader = cp == null || cp.isEmpty() ? parent : BindingLoader.of(cp, parent);
            Class<?> c = Class.forName(cls, false, loader);
            if (!DB.class.isAssignableFrom(c)) {
                return new Found(null, cls + " is not a YCSB binding: it does not extend site.ycsb.DB (YCSB core "
                        + "0.17.0)");
            }
            c.getConstructor();
            return new Found(c.asSubclass(DB.class), null);
        } catch (ClassNotFoundException e) {
            String where = cp == null || cp.isEmpty() ? "the worker's classpath (give the binding's jars with "
                    + "kvbench run --classpath)" : "--classpath " + cp + " nor on the worker's classpath";
            return new Found(null, "class " + cls + " not found in " + where);
        } catch (NoSuchMethodException e) {
            return new Found(null, cls + " has no public constructor without arguments (YCSB makes its DB so)");
        } catch (Exception | LinkageError e) {
            return new Found(null, "loading " + cls + ": " + e);
        }
    }

    private static String version(Found f) {
        if (f.cls() == null) {
            return "-";
        }
        CodeSource src = f.cls().getProtectionDomain().getCodeSource();
        URL at = src == null ? null : src.getLocation();
        String from = at == null ? "?" : at.getPath().replaceAll(".*/(?=.)", "");
        return f.cls().getName() + " from " + from + " (YCSB core " + DB.class.getPackage().getImplementationVersion()
                + ")";
    }

    /**
     * Refuses a job whose values are not YCSB records: the binding stores fields, and the
     * core verifies what they serialise back to.
     */
    public static void checkJob(String engine, JsonObject job) {
        JsonObject ds = job.getAsJsonObject("dataset");
        JsonObject v = ds == null ? null : ds.getAsJsonObject("value");
        JsonElement fields = v == null ? null : v.get("fields");
        if (fields == null || fields.isJsonNull() || fields.getAsLong() == 0) {
            throw new IllegalArgumentException(engine + " stores YCSB's records: the dataset's values must be fields "
                    + "(dataset value = { fields = 10, field_size = 100 }, YCSB's default, as scenarios/ycsb-*.toml); "
                    + "this plan's values are plain bytes (--value-size or value.size)");
        }
    }

    private final Class<? extends DB> cls;
    private final Properties props = new Properties();
    private final String table;
    private final Map<String, String> settings = new TreeMap<>();
    private final Map<Thread, DB> dbs = new ConcurrentHashMap<>();
    private final ThreadLocal<Fields> fields = ThreadLocal.withInitial(Fields::new);
    private final DB holder;

    YcsbEngine(Class<? extends DB> cls, OpenArgs a) throws Exception {
        this.cls = cls;
        String dir = a.dir().toAbsolutePath().toString();
        a.options().forEach((k, v) -> {
            if (v != null) {
                props.setProperty(k, v.toString().replace("{dir}", dir));
            }
        });
        props.putIfAbsent("kvbench.dir", dir);
        props.putIfAbsent("kvbench.sync", a.sync());
        String dirProp = DIR_PROPERTY.get(cls.getName());
        if (dirProp != null) {
            props.putIfAbsent(dirProp, dir);
        }
        table = props.getProperty("table", TABLE);
        holder = newDb();
        settings.put("binding", cls.getName());
        settings.put("properties", new TreeMap<>(props).toString());
        settings.put("sync", cls == KvbenchBinding.class ? "kvbench.sync = " + props.getProperty("kvbench.sync")
                : "the binding's own (its properties; kvbench's sync is not passed to it)");
        settings.put("record", "YCSB fields: put = insert, get = read of every field (verified), delete = delete, "
                + "update of one field = update with that field (the binding merges it in)");
    }

    private DB newDb() throws Exception {
        DB db = cls.getConstructor().newInstance();
        db.setProperties(props);
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        t.setContextClassLoader(cls.getClassLoader());
        try {
            db.init();
        } finally {
            t.setContextClassLoader(before);
        }
        return db;
    }

    /** This thread's DB instance, made on its first call. */
    private DB db() throws Exception {
        DB db = dbs.get(Thread.currentThread());
        if (db == null) {
            db = newDb();
            dbs.put(Thread.currentThread(), db);
        }
        return db;
    }

    private static String key(ByteBuffer k) {
        return new String(Engine.bytes(k), StandardCharsets.ISO_8859_1);
    }

    private static void check(Status s, String call, String key) throws Exception {
        if (s == Status.NOT_IMPLEMENTED) {
            throw new Unsupported("the binding's " + call);
        }
        if (!s.isOk()) {
            throw new Exception("the binding's " + call + "(" + key + ") returned " + s.getName() + ": "
                    + s.getDescription());
        }
    }

    /**
     * kvbench's serialised records as YCSB fields, a new map each (a binding may keep it). The
     * fields' iterators share one copy of the record, and the names of the last record are
     * kept (a workload's records repeat them): a write makes no string nor array per field.
     */
    static final class Fields {
        private String[] names = new String[0];
        private byte[][] nameBytes = new byte[0][];

        Map<String, ByteIterator> of(ByteBuffer value) {
            byte[] rec = new byte[value.remaining()];
            value.duplicate().get(rec);
            ByteBuffer b = ByteBuffer.wrap(rec);
            Map<String, ByteIterator> out = new LinkedHashMap<>();
            for (int i = 0; b.remaining() >= 8; i++) {
                int n = b.getInt();
                int at = b.position();
                b.position(at + n);
                String name = name(i, rec, at, n);
                int len = b.getInt();
                int v = b.position();
                b.position(v + len);
                out.put(name, new ByteArrayByteIterator(rec, v, len));
            }
            return out;
        }

        /** Field i's name, n bytes at rec[at]: the last record's i-th when the same. */
        private String name(int i, byte[] rec, int at, int n) {
            if (i < names.length && Arrays.equals(nameBytes[i], 0, nameBytes[i].length, rec, at, at + n)) {
                return names[i];
            }
            if (i >= names.length) {
                names = Arrays.copyOf(names, i + 1);
                nameBytes = Arrays.copyOf(nameBytes, i + 1);
            }
            nameBytes[i] = Arrays.copyOfRange(rec, at, at + n);
            names[i] = new String(nameBytes[i], StandardCharsets.UTF_8);
            return names[i];
        }
    }

    /** Field order: field0, field1, ..., field10 (shorter names first, then by name). */
    private static final Comparator<String> FIELD_ORDER = Comparator.comparingInt(String::length)
            .thenComparing(Comparator.naturalOrder());

    /**
     * The fields a binding read, in field order, serialised as kvbench serialises a record into
     * a buffer it reuses (valid until the next load), for the core to check. The field order
     * of the last record is kept: a record with the same names, every read of a workload, is
     * not sorted again. A value is copied once, from the binding's iterator into the buffer:
     * a ByteArrayByteIterator's bytes are read in place (docs/decisions.md, "YCSB bindings as
     * engines"), any other iterator's through its toArray.
     */
    static final class Record {
        private String[] names = {};
        private byte[][] nameBytes = {};
        private ByteIterator[] values = {};
        private ByteBuffer out = ByteBuffer.allocate(0);
        /** The values loaded are in out (their iterators read to their end). */
        private boolean written;
        /** The values loaded were put elsewhere (writeTo): their iterators are at their end. */
        private boolean elsewhere;

        /** Takes the fields' iterators (read once, by serialised). */
        Record load(Map<String, ByteIterator> fields) {
            if (fields.size() != names.length || !take(fields)) {
                order(fields);
                take(fields);
            }
            written = false;
            elsewhere = false;
            return this;
        }

        /** The length of the fields loaded, serialised (asked before writeTo). */
        int length() {
            if (written) {
                return out.limit();
            }
            int n = 0;
            for (int i = 0; i < names.length; i++) {
                n += 8 + nameBytes[i].length + (int) values[i].bytesLeft();
            }
            return n;
        }

        /** Puts the fields loaded, serialised, into `to` from its position: length() bytes. */
        void writeTo(ByteBuffer to) {
            if (written) {
                to.put(out.rewind());
                return;
            }
            put(to);
            elsewhere = true;
        }

        private void put(ByteBuffer to) {
            for (int i = 0; i < names.length; i++) {
                to.putInt(nameBytes[i].length).put(nameBytes[i]).putInt((int) values[i].bytesLeft());
                InPlace.put(values[i], to);
            }
        }

        /** The fields loaded, serialised as kvbench serialises a record. */
        ByteBuffer serialised() {
            if (written) {
                return out.rewind();
            }
            if (elsewhere) {
                throw new IllegalStateException("the record read was put into the worker's buffer already");
            }
            int n = length();
            if (out.capacity() < n) {
                out = ByteBuffer.allocate(n);
            }
            out.clear();
            put(out);
            written = true;
            return out.flip();
        }

        /** The iterators of the kept names; false when one is missing. */
        private boolean take(Map<String, ByteIterator> fields) {
            for (int i = 0; i < names.length; i++) {
                ByteIterator v = fields.get(names[i]);
                if (v == null) {
                    return false;
                }
                values[i] = v;
            }
            return true;
        }

        private void order(Map<String, ByteIterator> fields) {
            names = fields.keySet().toArray(new String[0]);
            Arrays.sort(names, FIELD_ORDER);
            nameBytes = new byte[names.length][];
            for (int i = 0; i < names.length; i++) {
                nameBytes[i] = names[i].getBytes(StandardCharsets.UTF_8);
            }
            values = new ByteIterator[names.length];
        }
    }

    @Override
    public void write(WriteBatch batch) throws Exception {
        DB db = db();
        Fields fields = this.fields.get();
        for (int i = 0; i < batch.size(); i++) {
            String k = key(batch.key(i));
            if (batch.delete(i)) {
                Status s = db.delete(table, k);
                if (s != Status.NOT_FOUND) {
                    check(s, "delete", k);
                }
            } else if (batch.merge(i)) {
                check(db.update(table, k, fields.of(batch.value(i))), "update", k);
            } else {
                check(db.insert(table, k, fields.of(batch.value(i))), "insert", k);
            }
        }
    }

    @Override
    public Reader reader() {
        return new FieldReader() {
            private DB db;
            private final HashMap<String, ByteIterator> got = new HashMap<>();
            private final Record record = new Record();

            @Override
            public boolean read(ByteBuffer key) throws Exception {
                if (db == null) {
                    db = db();
                }
                got.clear();
                String k = key(key);
                Status s = db.read(table, k, null, got);
                if (s == Status.NOT_FOUND) {
                    return false;
                }
                check(s, "read", k);
                record.load(got);
                return true;
            }

            @Override
            public ByteBuffer serialised() {
                return record.serialised();
            }

            @Override
            public int serialisedLength() {
                return record.length();
            }

            @Override
            public void serialiseTo(ByteBuffer to) {
                record.writeTo(to);
            }

            @Override
            public void close() throws Exception {
                if (db != null && dbs.remove(Thread.currentThread(), db)) {
                    db.cleanup();
                }
            }
        };
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() throws Exception {
        Exception first = null;
        List<DB> all = new ArrayList<>(dbs.values());
        dbs.clear();
        all.add(holder);
        for (DB db : all) {
            try {
                db.cleanup();
            } catch (Exception e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
