package kvbench.ycsb;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;

/**
 * The bytes a YCSB iterator has left, put into a buffer. A ByteArrayByteIterator (what
 * bindings return for the bytes they read) is read where its bytes are, through its private
 * fields: its toArray would first copy them into an array of their own, a garbage array per
 * field read (docs/decisions.md, "YCSB bindings as engines"). Any other iterator, or a YCSB
 * core whose class differs, goes through toArray.
 */
final class InPlace {
    private static final VarHandle STR, OFF, END;

    static {
        VarHandle str = null, off = null, end = null;
        try {
            var l = MethodHandles.privateLookupIn(ByteArrayByteIterator.class, MethodHandles.lookup());
            str = l.findVarHandle(ByteArrayByteIterator.class, "str", byte[].class);
            off = l.findVarHandle(ByteArrayByteIterator.class, "off", int.class);
            end = l.findVarHandle(ByteArrayByteIterator.class, "len", int.class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            str = null;
        }
        STR = str;
        OFF = off;
        END = end;
    }

    private InPlace() {}

    /** Whether ByteArrayByteIterators are read in place (their fields were found). */
    static boolean enabled() {
        return STR != null;
    }

    /** Puts what `it` has left into `out`, leaving `it` at its end (as toArray does). */
    static void put(ByteIterator it, ByteBuffer out) {
        if (STR == null || it.getClass() != ByteArrayByteIterator.class) {
            out.put(it.toArray());
            return;
        }
        byte[] str = (byte[]) STR.get(it);
        int off = (int) OFF.get(it);
        int end = (int) END.get(it);
        out.put(str, off, end - off);
        OFF.set(it, end);
    }
}
