package kvbench.engines;

import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.Map;

import kvbench.worker.Engine;

/**
 * A store used as a sorted map of byte arrays (unsigned key order): the write loop, the gets and
 * the scans that java-memory, java-h2mvstore and java-mapdb share. A subclass gives its map, the
 * entries from a key on, and what ends a write batch (a commit where the row syncs).
 */
abstract class SortedMapEngine implements Engine {
    /** The store's map of keys to values. */
    protected abstract Map<byte[], byte[]> map();

    /** The entries whose key is at or after {@code start}, in key order. */
    protected abstract Iterator<Map.Entry<byte[], byte[]>> entriesFrom(byte[] start);

    /** Called after each write batch. */
    protected void afterBatch() {}

    @Override
    public final void write(WriteBatch batch) {
        Map<byte[], byte[]> map = map();
        for (int i = 0; i < batch.size(); i++) {
            byte[] key = Engine.bytes(batch.key(i));
            if (batch.delete(i)) {
                map.remove(key);
            } else {
                map.put(key, Engine.bytes(batch.value(i)));
            }
        }
        afterBatch();
    }

    @Override
    public final Reader reader() {
        return new Reader() {
            @Override
            public ByteBuffer get(ByteBuffer key) {
                byte[] value = map().get(Engine.bytes(key));
                return value == null ? null : ByteBuffer.wrap(value);
            }

            @Override
            public long scan(ByteBuffer start, long limit, Visitor visit) {
                long n = 0;
                Iterator<Map.Entry<byte[], byte[]>> entries = entriesFrom(Engine.bytes(start));
                while (n < limit && entries.hasNext()) {
                    Map.Entry<byte[], byte[]> entry = entries.next();
                    n++;
                    if (!visit.visit(ByteBuffer.wrap(entry.getKey()), ByteBuffer.wrap(entry.getValue()))) {
                        break;
                    }
                }
                return n;
            }

            @Override
            public void close() {}
        };
    }
}
