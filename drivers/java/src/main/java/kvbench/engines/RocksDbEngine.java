package kvbench.engines;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * java-rocksdb: RocksDB through its own Java API, rocksdbjni (JNI, with the librocksdb it
 * bundles), as Kafka Streams and Flink call it. Gets and single puts use the direct-buffer
 * calls: no Java array per key or value.
 */
final class RocksDbEngine implements Engine {
    /** The rocksdbjni artifact pom.xml pins. */
    static final String JNI_VERSION = "10.10.1.1";

    static final Descriptor DESCRIPTOR = new Descriptor("java-rocksdb",
            "RocksDB through rocksdbjni (its Java API over JNI, bundled librocksdb): LSM tree",
            new Descriptor.Caps(true, false, true, true, true, true, false, true),
            List.of(new OptionSpec("compression", "enum", "snappy", "block compression of SST files",
                            List.of("none", "snappy", "lz4", "zstd")),
                    OptionSpec.of("block_cache", "int", "",
                            "LRU block cache capacity in bytes (default: the library's own block cache)"),
                    OptionSpec.of("bloom_bits", "int", "0", "bloom filter bits per key (0 = no filter)"),
                    OptionSpec.of("write_buffer", "int", "", "memtable size in bytes (default: the library's, 64 MiB)"),
                    OptionSpec.of("wal", "bool", "true", "write the WAL (false: WriteOptions.setDisableWAL)")),
            RocksDbEngine::version, () -> Registry.loads(RocksDB::loadLibrary), RocksDbEngine::new);

    static String version() {
        try {
            RocksDB.loadLibrary();
            return "rocksdbjni " + JNI_VERSION + " (RocksDB " + RocksDB.rocksdbVersion() + ")";
        } catch (Throwable t) {
            return "rocksdbjni " + JNI_VERSION;
        }
    }

    private final RocksDB db;
    private final Options opts;
    private final WriteOptions wo;
    private final boolean readWrite;
    private final AtomicBoolean wrote = new AtomicBoolean();
    private final Map<String, String> settings = new TreeMap<>();

    RocksDbEngine(OpenArgs a) throws Exception {
        RocksDB.loadLibrary();
        opts = new Options().setCreateIfMissing(true);
        opts.setCompressionType(switch (a.text("compression")) {
            case "none" -> CompressionType.NO_COMPRESSION;
            case "lz4" -> CompressionType.LZ4_COMPRESSION;
            case "zstd" -> CompressionType.ZSTD_COMPRESSION;
            default -> CompressionType.SNAPPY_COMPRESSION;
        });
        BlockBasedTableConfig table = new BlockBasedTableConfig();
        long cache = a.integer("block_cache", -1);
        if (cache >= 0) {
            table.setBlockCache(new LRUCache(cache));
        }
        long bloom = a.integer("bloom_bits", 0);
        if (bloom > 0) {
            table.setFilterPolicy(new BloomFilter(bloom, false));
        }
        opts.setTableFormatConfig(table);
        long wb = a.integer("write_buffer", -1);
        if (wb > 0) {
            opts.setWriteBufferSize(wb);
        }
        boolean wal = !a.options().containsKey("wal") || a.bool("wal");
        if (!wal && !"none".equals(a.sync())) {
            throw new IllegalArgumentException("java-rocksdb wal = false needs sync = \"none\" (got " + a.sync()
                    + "): RocksDB makes a write durable by syncing its WAL");
        }
        readWrite = "read-write".equals(a.mode());
        String dir = a.dir().toString();
        db = switch (a.mode()) {
            case "read-only" -> RocksDB.openReadOnly(opts, dir);
            case "secondary" -> {
                var sec = a.dir().resolve("secondary");
                Files.createDirectories(sec);
                opts.setMaxOpenFiles(-1);
                RocksDB s = RocksDB.openAsSecondary(opts, dir, sec.toString());
                s.tryCatchUpWithPrimary();
                yield s;
            }
            default -> RocksDB.open(opts, dir);
        };
        wo = new WriteOptions().setSync(!"none".equals(a.sync())).setDisableWAL(!wal);
        settings.put("sync", "none".equals(a.sync()) ? "WriteOptions.sync=false (WAL fsynced only at close)"
                : "WriteOptions.sync=true (WAL fsync per write batch)");
        settings.put("compression", opts.compressionType().name());
        settings.put("block_cache", cache >= 0 ? Long.toString(cache) : "library default");
        settings.put("bloom_bits", Long.toString(bloom));
        settings.put("write_buffer", Long.toString(opts.writeBufferSize()));
        settings.put("wal", Boolean.toString(wal));
        settings.put("mode", a.mode());
    }

    @Override
    public void write(WriteBatch b) throws Exception {
        wrote.set(true);
        if (b.size() == 1 && !b.delete(0)) {
            db.put(wo, direct(b.key(0)), direct(b.value(0)));
            return;
        }
        try (org.rocksdb.WriteBatch batch = new org.rocksdb.WriteBatch()) {
            for (int i = 0; i < b.size(); i++) {
                if (b.delete(i)) {
                    batch.delete(Engine.bytes(b.key(i)));
                } else {
                    batch.put(direct(b.key(i)), direct(b.value(i)));
                }
            }
            db.write(wo, batch);
        }
    }

    /** RocksDB's buffer calls take direct buffers (the core's are; an empty value may not be). */
    private static ByteBuffer direct(ByteBuffer b) {
        if (b.isDirect()) {
            return b;
        }
        ByteBuffer d = ByteBuffer.allocateDirect(b.remaining());
        d.put(b.duplicate()).flip();
        return d;
    }

    @Override
    public Reader reader() {
        return new Reader() {
            private final ReadOptions ro = new ReadOptions();
            private ByteBuffer val = ByteBuffer.allocateDirect(4096);

            @Override
            public ByteBuffer get(ByteBuffer key) throws Exception {
                int p = key.position();
                val.clear();
                int n = db.get(ro, key, val);
                if (n == RocksDB.NOT_FOUND) {
                    return null;
                }
                if (n > val.capacity()) { // the value did not fit: again with room for it
                    val = ByteBuffer.allocateDirect(Math.max(n, 2 * val.capacity()));
                    key.position(p);
                    n = db.get(ro, key, val);
                    if (n == RocksDB.NOT_FOUND) {
                        return null;
                    }
                }
                val.position(0).limit(n);
                return val;
            }

            @Override
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                try (RocksIterator it = db.newIterator(ro)) {
                    it.seek(direct(start));
                    for (; it.isValid() && n < limit; it.next()) {
                        n++;
                        ByteBuffer k = scanKey = fill(scanKey, it::key);
                        ByteBuffer v = scanVal = fill(scanVal, it::value);
                        if (!visit.visit(k, v)) {
                            break;
                        }
                    }
                }
                return n;
            }

            private ByteBuffer scanKey = ByteBuffer.allocateDirect(256);
            private ByteBuffer scanVal = ByteBuffer.allocateDirect(4096);

            /** The iterator's key or value copied into b (grown when it does not fit): no Java
             * array per record. */
            private static ByteBuffer fill(ByteBuffer b, java.util.function.ToIntFunction<ByteBuffer> read) {
                b.clear();
                int n = read.applyAsInt(b);
                if (n > b.capacity()) {
                    b = ByteBuffer.allocateDirect(Math.max(n, 2 * b.capacity()));
                    read.applyAsInt(b);
                }
                return b.position(0).limit(n);
            }

            @Override
            public void close() {
                ro.close();
            }
        };
    }

    @Override
    public String settle() throws Exception {
        if (!readWrite) {
            throw new Unsupported("java-rocksdb opened read-only: nothing to settle");
        }
        long t0 = System.nanoTime();
        try (FlushOptions f = new FlushOptions().setWaitForFlush(true)) {
            db.flush(f);
        }
        db.compactRange();
        return String.format("flushed the memtable and compacted the whole key range (compactRange) in %.1f ms",
                (System.nanoTime() - t0) / 1e6);
    }

    @Override
    public Map<String, Double> internals() {
        Map<String, Double> out = new TreeMap<>();
        String[][] names = {{"rocksdb.estimate-pending-compaction-bytes", "rocksdb.compaction.pending_bytes"},
            {"rocksdb.num-running-compactions", "rocksdb.compaction.running"},
            {"rocksdb.num-files-at-level0", "rocksdb.l0_files"}};
        for (String[] n : names) {
            try {
                out.put(n[1], (double) db.getLongProperty(n[0]));
            } catch (Exception e) {
                // a property this build lacks: left out
            }
        }
        return out;
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() throws Exception {
        // Without per-write sync the WAL sits in the page cache; make it durable now.
        if (readWrite && wrote.get() && !wo.sync() && !wo.disableWAL()) {
            db.syncWal();
        }
        db.close();
        wo.close();
        opts.close();
    }
}
