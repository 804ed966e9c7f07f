package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;
import org.lmdbjava.CursorIterable;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.KeyRange;
import org.lmdbjava.Meta;
import org.lmdbjava.Txn;

/**
 * java-lmdb: LMDB through lmdbjava (the liblmdb it bundles), values read in place from the
 * memory map inside a read transaction, as the Rust lmdb engine reads them.
 */
final class LmdbEngine implements Engine {
    /** The lmdbjava artifact pom.xml pins. */
    static final String JAVA_VERSION = "0.9.1";

    static final Descriptor DESCRIPTOR = new Descriptor("java-lmdb",
            "LMDB through lmdbjava (bundled liblmdb): B+tree in a memory map, MVCC read transactions",
            new Descriptor.Caps(true, false, true, true, false, true, false, true),
            List.of(OptionSpec.of("map_size", "int", "",
                            "memory map size in bytes (default: max(1 GiB, 4 x the plan's bytes))"),
                    OptionSpec.of("no_readahead", "bool", "true", "MDB_NORDAHEAD: no OS read-ahead on the map"),
                    OptionSpec.of("write_map", "bool", "false",
                            "MDB_WRITEMAP: write through a writable memory map instead of write()")),
            LmdbEngine::version, () -> Registry.loads(Meta::version), LmdbEngine::new);

    static String version() {
        try {
            Meta.Version v = Meta.version();
            return "lmdbjava " + JAVA_VERSION + " (LMDB " + v.major + "." + v.minor + "." + v.patch + ")";
        } catch (Throwable t) {
            return "lmdbjava " + JAVA_VERSION;
        }
    }

    private final Env<ByteBuffer> env;
    private final Dbi<ByteBuffer> db;
    private final Map<String, String> settings = new TreeMap<>();

    LmdbEngine(OpenArgs a) {
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-lmdb has no secondary open");
        }
        long map = a.integer("map_size", -1);
        if (a.options().get("map_size") != null && map <= 0) {
            throw new IllegalArgumentException("java-lmdb map_size must be positive, got " + map);
        }
        if (map < 0) {
            map = Math.max(1L << 30, a.expectedBytes() * 4);
        }
        boolean ro = a.readOnly();
        List<EnvFlags> flags = new ArrayList<>(List.of(EnvFlags.MDB_NOTLS, EnvFlags.MDB_NOSUBDIR));
        boolean noSync = "none".equals(a.sync()) && !ro;
        if (noSync) {
            flags.add(EnvFlags.MDB_NOSYNC);
        }
        if (ro) {
            flags.add(EnvFlags.MDB_RDONLY_ENV);
        }
        if (!a.options().containsKey("no_readahead") || a.bool("no_readahead")) {
            flags.add(EnvFlags.MDB_NORDAHEAD);
        }
        if (a.bool("write_map") && !ro) {
            flags.add(EnvFlags.MDB_WRITEMAP);
        }
        env = Env.create().setMapSize(map).setMaxDbs(1).setMaxReaders(256)
                .open(a.dir().resolve("data.mdb").toFile(), flags.toArray(new EnvFlags[0]));
        db = ro ? env.openDbi((byte[]) null) : env.openDbi((byte[]) null, DbiFlags.MDB_CREATE);
        settings.put("sync", noSync ? "MDB_NOSYNC (synced at close)" : "fsync per commit");
        settings.put("map_size", Long.toString(map));
        settings.put("flags", flags.toString());
    }

    @Override
    public void write(WriteBatch b) {
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            for (int i = 0; i < b.size(); i++) {
                if (b.delete(i)) {
                    db.delete(txn, direct(b.key(i)));
                } else {
                    db.put(txn, direct(b.key(i)), direct(b.value(i)));
                }
            }
            txn.commit();
        }
    }

    /** lmdbjava reads a direct buffer from its start: a buffer of its own for the bytes left. */
    private static ByteBuffer direct(ByteBuffer b) {
        if (b.isDirect()) {
            return b.position() == 0 ? b : b.slice();
        }
        ByteBuffer d = ByteBuffer.allocateDirect(b.remaining());
        d.put(b.duplicate()).flip();
        return d;
    }

    @Override
    public Reader reader() {
        return new Reader() {
            private final Txn<ByteBuffer> txn = env.txnRead();
            /** LMDB's largest key (511 bytes) fits: a get copies its key here, no allocation. */
            private final ByteBuffer kb = ByteBuffer.allocateDirect(env.getMaxKeySize());

            @Override
            public ByteBuffer get(ByteBuffer key) {
                int n = key.remaining();
                if (n > kb.capacity()) {
                    return db.get(txn, direct(key)); // LMDB refuses it with its own error
                }
                kb.clear().put(0, key, key.position(), n).limit(n);
                return db.get(txn, kb);
            }

            @Override
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                try (CursorIterable<ByteBuffer> it = db.iterate(txn, KeyRange.atLeast(direct(start)))) {
                    for (CursorIterable.KeyVal<ByteBuffer> kv : it) {
                        if (n >= limit) {
                            break;
                        }
                        n++;
                        if (!visit.visit(kv.key(), kv.val())) {
                            break;
                        }
                    }
                }
                return n;
            }

            @Override
            public void refresh() {
                txn.reset();
                txn.renew();
            }

            @Override
            public void close() {
                txn.close();
            }
        };
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        if (!env.isReadOnly()) {
            env.sync(true);
        }
        env.close();
    }
}
