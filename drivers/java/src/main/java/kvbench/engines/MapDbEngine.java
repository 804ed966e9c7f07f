package kvbench.engines;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.OpenArgs;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;

/** java-mapdb: MapDB's BTreeMap (a concurrent B-link tree) in a file. */
final class MapDbEngine extends SortedMapEngine {
    /** The mapdb artifact pom.xml pins. */
    static final String VERSION = "3.1.0";

    static final Descriptor DESCRIPTOR = new Descriptor("java-mapdb",
            "MapDB (org.mapdb): a concurrent B-link tree (BTreeMap) in a file",
            new Descriptor.Caps(true, false, true, true, false, true, false, true),
            List.of(OptionSpec.of("mmap", "bool", "true", "memory-map the file (fileMmapEnableIfSupported)")),
            () -> "mapdb " + VERSION, () -> null, MapDbEngine::new);

    private final DB db;
    private final BTreeMap<byte[], byte[]> map;
    private final boolean commitEach;
    private final Map<String, String> settings = new TreeMap<>();

    MapDbEngine(OpenArgs a) {
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-mapdb has no secondary open");
        }
        commitEach = !"none".equals(a.sync());
        DBMaker.Maker m = DBMaker.fileDB(a.dir().resolve("map.db").toFile()).closeOnJvmShutdown();
        boolean mmap = !a.options().containsKey("mmap") || a.bool("mmap");
        if (mmap) {
            m = m.fileMmapEnableIfSupported();
        }
        if (commitEach) {
            m = m.transactionEnable();
        }
        if (a.readOnly()) {
            m = m.readOnly();
        }
        db = m.make();
        var maker = db.treeMap("kv", Serializer.BYTE_ARRAY, Serializer.BYTE_ARRAY);
        map = a.readOnly() ? maker.open() : maker.createOrOpen();
        settings.put("sync", commitEach ? "transactionEnable(): write-ahead log, DB.commit() per write batch"
                : "no transactions: writes go to the store, durable at close");
        settings.put("mmap", Boolean.toString(mmap));
    }

    @Override
    protected Map<byte[], byte[]> map() {
        return map;
    }

    @Override
    protected Iterator<Map.Entry<byte[], byte[]>> entriesFrom(byte[] start) {
        return map.entryIterator(start, true, null, false);
    }

    @Override
    protected void afterBatch() {
        if (commitEach) {
            db.commit();
        }
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        if (!db.isClosed()) {
            if (commitEach) {
                db.commit();
            }
            db.close();
        }
    }
}
