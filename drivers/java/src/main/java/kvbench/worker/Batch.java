package kvbench.worker;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/** A write batch of buffers the caller made (the warm-up's, the tests'). */
public final class Batch implements Engine.WriteBatch {
    private final List<ByteBuffer> keys = new ArrayList<>();
    private final List<ByteBuffer> values = new ArrayList<>();

    public Batch put(ByteBuffer k, ByteBuffer v) {
        keys.add(k);
        values.add(v);
        return this;
    }

    public Batch delete(ByteBuffer k) {
        keys.add(k);
        values.add(null);
        return this;
    }

    public void clear() {
        keys.clear();
        values.clear();
    }

    @Override
    public int size() {
        return keys.size();
    }

    @Override
    public ByteBuffer key(int i) {
        return keys.get(i).duplicate();
    }

    @Override
    public ByteBuffer value(int i) {
        ByteBuffer v = values.get(i);
        return v == null ? ByteBuffer.allocate(0) : v.duplicate();
    }

    @Override
    public boolean delete(int i) {
        return values.get(i) == null;
    }
}
