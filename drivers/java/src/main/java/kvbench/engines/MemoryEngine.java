package kvbench.engines;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

import kvbench.worker.Descriptor;

/** java-memory: a sorted in-memory map, the tests' oracle (not persistent). */
final class MemoryEngine extends SortedMapEngine {
    static final Descriptor DESCRIPTOR = new Descriptor("java-memory",
            "a Java ConcurrentSkipListMap (test oracle, not persistent)",
            new Descriptor.Caps(true, false, true, false, false, false, false, true), List.of(), () -> "-",
            () -> null, a -> new MemoryEngine());

    private final ConcurrentSkipListMap<byte[], byte[]> map = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);

    @Override
    protected Map<byte[], byte[]> map() {
        return map;
    }

    @Override
    protected Iterator<Map.Entry<byte[], byte[]>> entriesFrom(byte[] start) {
        return map.tailMap(start).entrySet().iterator();
    }

    @Override
    public Map<String, String> settings() {
        return Map.of("sync", "none (memory only)");
    }

    @Override
    public void close() {}
}
