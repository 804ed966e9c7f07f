package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

import kvbench.worker.Descriptor;
import kvbench.worker.Engine;

/** java-memory: a sorted in-memory map, the tests' oracle (not persistent). */
final class MemoryEngine implements Engine {
    static final Descriptor DESCRIPTOR = new Descriptor("java-memory",
            "a Java ConcurrentSkipListMap (test oracle, not persistent)",
            new Descriptor.Caps(true, false, true, false, false, false, false, true), List.of(), () -> "-",
            () -> null, a -> new MemoryEngine());

    private final ConcurrentSkipListMap<byte[], byte[]> map = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);

    @Override
    public void write(WriteBatch b) {
        for (int i = 0; i < b.size(); i++) {
            byte[] k = Engine.bytes(b.key(i));
            if (b.delete(i)) {
                map.remove(k);
            } else {
                map.put(k, Engine.bytes(b.value(i)));
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
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                for (var e : map.tailMap(Engine.bytes(start)).entrySet()) {
                    if (n >= limit) {
                        break;
                    }
                    n++;
                    if (!visit.visit(ByteBuffer.wrap(e.getKey()), ByteBuffer.wrap(e.getValue()))) {
                        break;
                    }
                }
                return n;
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public Map<String, String> settings() {
        return Map.of("sync", "none (memory only)");
    }

    @Override
    public void close() {}
}
