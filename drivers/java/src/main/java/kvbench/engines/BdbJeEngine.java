package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.sleepycat.je.Cursor;
import com.sleepycat.je.CursorConfig;
import com.sleepycat.je.Database;
import com.sleepycat.je.DatabaseConfig;
import com.sleepycat.je.DatabaseEntry;
import com.sleepycat.je.Durability;
import com.sleepycat.je.Environment;
import com.sleepycat.je.EnvironmentConfig;
import com.sleepycat.je.JEVersion;
import com.sleepycat.je.LockMode;
import com.sleepycat.je.OperationStatus;
import com.sleepycat.je.Transaction;
import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;

/** java-bdbje: Berkeley DB Java Edition, a log-structured B+tree in pure Java, transactional. */
final class BdbJeEngine implements Engine {
    static final Descriptor DESCRIPTOR = new Descriptor("java-bdbje",
            "Berkeley DB Java Edition (com.sleepycat:je): log-structured B+tree, transactional, pure Java",
            new Descriptor.Caps(true, false, true, true, false, true, false, true),
            List.of(OptionSpec.of("cache_size", "int", "", "JE cache in bytes (default: JE's, 60% of the heap)")),
            () -> "je " + JEVersion.CURRENT_VERSION, () -> null, BdbJeEngine::new);

    private final Environment env;
    private final Database db;
    private final Map<String, String> settings = new TreeMap<>();

    BdbJeEngine(OpenArgs a) {
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-bdbje has no secondary open");
        }
        boolean ro = a.readOnly();
        EnvironmentConfig ec = new EnvironmentConfig().setAllowCreate(!ro).setTransactional(true).setReadOnly(ro);
        boolean sync = !"none".equals(a.sync());
        ec.setDurability(sync ? Durability.COMMIT_SYNC : Durability.COMMIT_NO_SYNC);
        long cache = a.integer("cache_size", -1);
        if (cache > 0) {
            ec.setCacheSize(cache);
        }
        env = new Environment(a.dir().toFile(), ec);
        DatabaseConfig dc = new DatabaseConfig().setAllowCreate(!ro).setTransactional(true).setReadOnly(ro);
        db = env.openDatabase(null, "kv", dc);
        settings.put("sync", sync ? "Durability.COMMIT_SYNC (fsync per commit)"
                : "Durability.COMMIT_NO_SYNC (log written by JE's buffers, synced at close)");
        settings.put("cache_size", Long.toString(env.getConfig().getCacheSize()));
    }

    @Override
    public void write(WriteBatch b) {
        Transaction txn = env.beginTransaction(null, null);
        try {
            for (int i = 0; i < b.size(); i++) {
                DatabaseEntry k = new DatabaseEntry(Engine.bytes(b.key(i)));
                if (b.delete(i)) {
                    db.delete(txn, k);
                } else {
                    db.put(txn, k, new DatabaseEntry(Engine.bytes(b.value(i))));
                }
            }
            txn.commit();
            txn = null;
        } finally {
            if (txn != null) {
                txn.abort();
            }
        }
    }

    @Override
    public Reader reader() {
        return new Reader() {
            private final DatabaseEntry v = new DatabaseEntry();

            @Override
            public ByteBuffer get(ByteBuffer key) {
                DatabaseEntry k = new DatabaseEntry(Engine.bytes(key));
                if (db.get(null, k, v, LockMode.READ_COMMITTED) != OperationStatus.SUCCESS) {
                    return null;
                }
                return ByteBuffer.wrap(v.getData(), v.getOffset(), v.getSize()).slice();
            }

            @Override
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                DatabaseEntry k = new DatabaseEntry(Engine.bytes(start));
                DatabaseEntry val = new DatabaseEntry();
                try (Cursor c = db.openCursor(null, CursorConfig.READ_COMMITTED)) {
                    OperationStatus st = c.getSearchKeyRange(k, val, LockMode.DEFAULT);
                    for (; st == OperationStatus.SUCCESS && n < limit; st = c.getNext(k, val, LockMode.DEFAULT)) {
                        n++;
                        ByteBuffer kb = ByteBuffer.wrap(k.getData(), k.getOffset(), k.getSize()).slice();
                        ByteBuffer vb = ByteBuffer.wrap(val.getData(), val.getOffset(), val.getSize()).slice();
                        if (!visit.visit(kb, vb)) {
                            break;
                        }
                    }
                }
                return n;
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public String settle() {
        if (env.getConfig().getReadOnly()) {
            return "opened read-only: nothing to settle";
        }
        long t0 = System.nanoTime();
        int cleaned = env.cleanLog();
        env.checkpoint(new com.sleepycat.je.CheckpointConfig().setForce(true));
        return String.format("cleaned %d log files and checkpointed in %.1f ms", cleaned,
                (System.nanoTime() - t0) / 1e6);
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        db.close();
        env.close();
    }
}
