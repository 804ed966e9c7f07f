package kvbench.ycsb;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;

import kvbench.engines.Registry;
import kvbench.worker.Batch;
import kvbench.worker.Descriptor;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * kvbench's Java engines as a YCSB binding: YCSB's own Client drives the very engine code the
 * Java worker runs. Properties: `kvbench.engine` (a java-* engine, default java-lmdb),
 * `kvbench.dir` (its directory), `kvbench.sync` (none, commit or always; default none). YCSB
 * makes one DB per client thread: they share one open engine per directory, each with its own
 * reader. A record is its fields in name order, each as u32 name length, name, u32 value
 * length, value (big-endian lengths); an update reads the record, merges the fields given and
 * writes it back, as YCSB's RocksDB binding does.
 */
public final class KvbenchBinding extends DB {
    private static final Map<Path, Shared> OPEN = new HashMap<>();
    /** Writes so far (every thread's): a reader whose snapshot predates one refreshes first. */
    private static final AtomicLong WRITES = new AtomicLong();

    /** One open engine and how many bindings use it. */
    private static final class Shared {
        final Engine engine;
        int users;

        Shared(Engine e) {
            engine = e;
        }
    }

    private Path dir;
    private Engine engine;
    private Engine.Reader reader;
    private long seen = -1;

    @Override
    public void init() throws DBException {
        String name = getProperties().getProperty("kvbench.engine", "java-lmdb");
        Descriptor d = Registry.find(name);
        if (d == null) {
            throw new DBException("kvbench.engine = " + name + ": not a Java engine (kvbench-java-worker --list)");
        }
        dir = Path.of(getProperties().getProperty("kvbench.dir", "kvbench-ycsb-" + name)).toAbsolutePath();
        String sync = getProperties().getProperty("kvbench.sync", "none");
        try {
            synchronized (OPEN) {
                Shared s = OPEN.get(dir);
                if (s == null) {
                    Files.createDirectories(dir);
                    s = new Shared(d.open().open(new OpenArgs(dir, new HashMap<>(), sync, "read-write", 0, 0, "", "")));
                    OPEN.put(dir, s);
                }
                s.users++;
                engine = s.engine;
            }
        } catch (Exception e) {
            throw new DBException(e);
        }
    }

    @Override
    public void cleanup() throws DBException {
        try {
            if (reader != null) {
                reader.close();
            }
            synchronized (OPEN) {
                Shared s = OPEN.get(dir);
                if (--s.users == 0) {
                    OPEN.remove(dir);
                    s.engine.close();
                }
            }
        } catch (Exception e) {
            throw new DBException(e);
        }
    }

    private static ByteBuffer key(String k) {
        byte[] b = k.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocateDirect(b.length).put(b).flip();
    }

    /**
     * The reader, made on the first read (an instance that only writes, as a load thread's, holds
     * no snapshot: an idle LMDB read transaction would keep every page freed after it from
     * reuse, until the map is full), refreshed when a write came after its snapshot.
     */
    private Engine.Reader fresh() throws Exception {
        long w = WRITES.get();
        if (reader == null) {
            reader = engine.reader();
            seen = w;
        } else if (w != seen) {
            reader.refresh();
            seen = w;
        }
        return reader;
    }

    static byte[] encode(Map<String, ByteIterator> fields) {
        TreeMap<String, byte[]> sorted = new TreeMap<>();
        fields.forEach((k, v) -> sorted.put(k, v.toArray()));
        int n = 0;
        for (var e : sorted.entrySet()) {
            n += 8 + e.getKey().getBytes(StandardCharsets.UTF_8).length + e.getValue().length;
        }
        ByteBuffer out = ByteBuffer.allocate(n);
        for (var e : sorted.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            out.putInt(name.length).put(name).putInt(e.getValue().length).put(e.getValue());
        }
        return out.array();
    }

    static void decode(ByteBuffer v, Set<String> wanted, Map<String, ByteIterator> out) {
        ByteBuffer b = v.duplicate();
        while (b.remaining() >= 8) {
            byte[] name = new byte[b.getInt()];
            b.get(name);
            byte[] val = new byte[b.getInt()];
            b.get(val);
            String f = new String(name, StandardCharsets.UTF_8);
            if (wanted == null || wanted.contains(f)) {
                out.put(f, new ByteArrayByteIterator(val));
            }
        }
    }

    /** YCSB's ERROR with the engine's reason, which a harness that reads the status can show. */
    private static Status error(Exception e) {
        return new Status("ERROR", e.toString());
    }

    @Override
    public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
        try {
            ByteBuffer v = fresh().get(key(key));
            if (v == null) {
                return Status.NOT_FOUND;
            }
            decode(v, fields, result);
            return Status.OK;
        } catch (Exception e) {
            return error(e);
        }
    }

    @Override
    public Status scan(String table, String start, int count, Set<String> fields,
            Vector<HashMap<String, ByteIterator>> result) {
        try {
            fresh().scan(key(start), count, (k, v) -> {
                HashMap<String, ByteIterator> r = new HashMap<>();
                decode(v, fields, r);
                result.add(r);
                return true;
            });
            return Status.OK;
        } catch (Engine.Unsupported e) {
            return Status.NOT_IMPLEMENTED;
        } catch (Exception e) {
            return error(e);
        }
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
        Map<String, ByteIterator> record = new HashMap<>();
        Status s = read(table, key, null, record);
        if (s != Status.OK) {
            return s;
        }
        record.putAll(values);
        return insert(table, key, record);
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
        try {
            engine.write(new Batch().put(key(key), ByteBuffer.wrap(encode(values))));
            WRITES.incrementAndGet();
            return Status.OK;
        } catch (Exception e) {
            return error(e);
        }
    }

    @Override
    public Status delete(String table, String key) {
        try {
            engine.write(new Batch().delete(key(key)));
            WRITES.incrementAndGet();
            return Status.OK;
        } catch (Exception e) {
            return error(e);
        }
    }
}
