package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Descriptor.OptionSpec;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;
import net.openhft.chronicle.map.ChronicleMap;

/**
 * java-chroniclemap: OpenHFT's Chronicle Map, an off-heap hash map in a memory-mapped file. A
 * hash map: no ordered scans. Its segments are sized at creation from the plan's records and
 * bytes (it grows to max_bloat_factor times that); writes go to the mapping, with no call that
 * forces them to disk, so only sync = none can run.
 */
final class ChronicleMapEngine implements Engine {
    /** The chronicle-map artifact pom.xml pins. */
    static final String VERSION = "2026.1";

    static final Descriptor DESCRIPTOR = new Descriptor("java-chroniclemap",
            "Chronicle Map (net.openhft): an off-heap hash map in a memory-mapped file, segments sized at creation",
            new Descriptor.Caps(false, false, true, false, false, true, false, true),
            List.of(OptionSpec.of("entries", "int", "",
                            "entries the map is sized for (default: the plan's records, at least 1000)"),
                    OptionSpec.of("max_bloat_factor", "int", "4",
                            "how many times the sized entries the map may grow to (maxBloatFactor)")),
            () -> "chronicle-map " + VERSION, () -> Registry.loads(() -> ChronicleMap.class.getName()),
            ChronicleMapEngine::new);

    private final ChronicleMap<byte[], byte[]> map;
    private final Map<String, String> settings = new TreeMap<>();

    ChronicleMapEngine(OpenArgs a) throws Exception {
        if (!"none".equals(a.sync())) {
            throw new Unsupported("sync = " + a.sync() + ": Chronicle Map has no call that forces its mapped "
                    + "file to disk");
        }
        if ("secondary".equals(a.mode())) {
            throw new IllegalArgumentException("java-chroniclemap has no secondary open");
        }
        long entries = a.integer("entries", Math.max(1000, a.expectedRecords()));
        long bloat = a.integer("max_bloat_factor", 4);
        if (entries <= 0 || bloat < 1 || bloat > 1000) {
            throw new IllegalArgumentException("java-chroniclemap: entries must be positive and max_bloat_factor "
                    + "1..1000, got " + entries + " and " + bloat);
        }
        double avgValue = a.expectedRecords() > 0 ? Math.max(1.0, (double) a.expectedBytes() / a.expectedRecords())
                : 100;
        map = ChronicleMap.of(byte[].class, byte[].class).name("kvbench").entries(entries)
                .averageKeySize(24).averageValueSize(avgValue).maxBloatFactor(bloat)
                .createPersistedTo(a.dir().resolve("map.dat").toFile());
        settings.put("sync", "none: writes go to the memory-mapped file, written back by the OS");
        settings.put("entries", Long.toString(entries));
        settings.put("average_value_size", String.format("%.0f", avgValue));
        settings.put("max_bloat_factor", Long.toString(bloat));
    }

    @Override
    public void write(WriteBatch b) {
        for (int i = 0; i < b.size(); i++) {
            byte[] key = Engine.bytes(b.key(i));
            if (b.delete(i)) {
                map.remove(key);
            } else {
                map.put(key, Engine.bytes(b.value(i)));
            }
        }
    }

    @Override
    public Reader reader() {
        return new Reader() {
            @Override
            public ByteBuffer get(ByteBuffer key) {
                byte[] v = map.get(Engine.bytes(key));
                return v == null ? null : ByteBuffer.wrap(v);
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public Map<String, String> settings() {
        return settings;
    }

    @Override
    public void close() {
        map.close();
    }
}
