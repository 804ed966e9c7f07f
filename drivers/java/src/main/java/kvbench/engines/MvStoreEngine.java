package kvbench.engines;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.OpenArgs;
import org.h2.engine.Constants;
import org.h2.mvstore.Cursor;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.type.ByteArrayDataType;

/**
 * java-h2mvstore: H2's MVStore, the log-structured copy-on-write B-tree under the H2 database,
 * used directly as a map of byte arrays (unsigned order).
 */
final class MvStoreEngine extends SortedMapEngine {
    static final Descriptor DESCRIPTOR = new Descriptor("java-h2mvstore",
            "H2 MVStore (com.h2database:h2): log-structured copy-on-write B-tree",
            new Descriptor.Caps(true, false, true, true, false, true, false, true),
            List.of(OptionSpec.of("cache_mb", "int", "", "read cache in MiB (default: MVStore's, 16 MiB)"),
                    OptionSpec.of("compress", "bool", "false", "LZF-compress pages")),
            () -> "h2 " + Constants.FULL_VERSION, () -> null, MvStoreEngine::new);

    private final MVStore store;
    private final MVMap<byte[], byte[]> map;
    private final boolean syncEach;
    private final Map<String, String> settings = new TreeMap<>();

    MvStoreEngine(OpenArgs a) {
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-h2mvstore has no secondary open");
        }
        MVStore.Builder b = new MVStore.Builder().fileName(a.dir().resolve("store.mv").toString());
        long cache = a.integer("cache_mb", -1);
        if (cache > 0) {
            b.cacheSize((int) cache);
        }
        if (a.bool("compress")) {
            b.compress();
        }
        if (a.readOnly()) {
            b.readOnly();
        }
        store = b.open();
        map = store.openMap("kv", new MVMap.Builder<byte[], byte[]>().keyType(ByteArrayDataType.INSTANCE)
                .valueType(ByteArrayDataType.INSTANCE));
        syncEach = !"none".equals(a.sync());
        settings.put("sync", syncEach ? "MVStore.commit() and sync() per write batch"
                : "autocommit: MVStore's background writer stores changes about every second (no fsync)");
        settings.put("cache_mb", cache > 0 ? Long.toString(cache) : "MVStore default");
        settings.put("compress", Boolean.toString(a.bool("compress")));
    }

    @Override
    protected Map<byte[], byte[]> map() {
        return map;
    }

    @Override
    protected Iterator<Map.Entry<byte[], byte[]>> entriesFrom(byte[] start) {
        Cursor<byte[], byte[]> cursor = map.cursor(start);
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return cursor.hasNext();
            }

            @Override
            public Map.Entry<byte[], byte[]> next() {
                byte[] key = cursor.next();
                return Map.entry(key, cursor.getValue());
            }
        };
    }

    @Override
    protected void afterBatch() {
        if (syncEach) {
            store.commit();
            store.sync();
        }
    }

    @Override
    public void finishLoad() {
        store.commit();
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        store.close();
    }
}
