package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jetbrains.exodus.ArrayByteIterable;
import jetbrains.exodus.ByteIterable;
import jetbrains.exodus.env.Cursor;
import jetbrains.exodus.env.Environment;
import jetbrains.exodus.env.EnvironmentConfig;
import jetbrains.exodus.env.Environments;
import jetbrains.exodus.env.Store;
import jetbrains.exodus.env.StoreConfig;
import jetbrains.exodus.env.Transaction;
import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;

/**
 * java-xodus: JetBrains Xodus (the store under YouTrack): an append-only log of B+tree pages
 * with snapshot-isolated transactions and a background cleaner.
 */
final class XodusEngine implements Engine {
    /** The xodus-environment artifact pom.xml pins. */
    static final String VERSION = "2.0.1";

    static final Descriptor DESCRIPTOR = new Descriptor("java-xodus",
            "JetBrains Xodus (org.jetbrains.xodus): log-structured B+tree, snapshot-isolated transactions",
            new Descriptor.Caps(true, false, true, true, false, true, false, true),
            List.of(OptionSpec.of("cache_percent", "int", "",
                    "tree cache as a share of the heap, in percent (default: Xodus's, 50)")),
            () -> "xodus " + VERSION, () -> null, XodusEngine::new);

    private final Environment env;
    private final Store store;
    private final Map<String, String> settings = new TreeMap<>();

    XodusEngine(OpenArgs a) {
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-xodus has no secondary open");
        }
        boolean sync = !"none".equals(a.sync());
        EnvironmentConfig c = new EnvironmentConfig().setLogDurableWrite(sync).setEnvIsReadonly(a.readOnly());
        long cache = a.integer("cache_percent", -1);
        if (cache > 0) {
            c.setMemoryUsagePercentage((int) cache);
        }
        env = Environments.newInstance(a.dir().toFile(), c);
        store = env.computeInTransaction(t -> env.openStore("kv", StoreConfig.WITHOUT_DUPLICATES, t));
        settings.put("sync", sync ? "EnvironmentConfig.setLogDurableWrite(true): fsync per commit"
                : "log written by Xodus's buffers, no fsync per commit");
        settings.put("cache_percent", cache > 0 ? Long.toString(cache) : "Xodus default");
    }

    private static ArrayByteIterable it(ByteBuffer b) {
        return new ArrayByteIterable(Engine.bytes(b));
    }

    private static ByteBuffer buf(ByteIterable b) {
        return ByteBuffer.wrap(b.getBytesUnsafe(), 0, b.getLength()).slice();
    }

    @Override
    public void write(WriteBatch b) {
        env.executeInTransaction(t -> {
            for (int i = 0; i < b.size(); i++) {
                if (b.delete(i)) {
                    store.delete(t, it(b.key(i)));
                } else {
                    store.put(t, it(b.key(i)), it(b.value(i)));
                }
            }
        });
    }

    @Override
    public Reader reader() {
        return new Reader() {
            private Transaction txn = env.beginReadonlyTransaction();

            @Override
            public ByteBuffer get(ByteBuffer key) {
                ByteIterable v = store.get(txn, it(key));
                return v == null ? null : buf(v);
            }

            @Override
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                try (Cursor c = store.openCursor(txn)) {
                    for (boolean ok = c.getSearchKeyRange(it(start)) != null; ok && n < limit; ok = c.getNext()) {
                        n++;
                        if (!visit.visit(buf(c.getKey()), buf(c.getValue()))) {
                            break;
                        }
                    }
                }
                return n;
            }

            @Override
            public void refresh() {
                txn.abort();
                txn = env.beginReadonlyTransaction();
            }

            @Override
            public void close() {
                txn.abort();
            }
        };
    }

    @Override
    public String settle() {
        long t0 = System.nanoTime();
        env.gc();
        env.executeTransactionSafeTask(() -> { });
        return String.format("asked the cleaner to run (Environment.gc) in %.1f ms", (System.nanoTime() - t0) / 1e6);
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        env.close();
    }
}
