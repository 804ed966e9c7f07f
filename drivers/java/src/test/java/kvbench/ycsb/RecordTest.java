package kvbench.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.StringByteIterator;

/** What a ycsb: row compares, and hands the core, for the fields a binding read. */
class RecordTest {
    static Map<String, ByteIterator> fields(String... nameValue) {
        Map<String, ByteIterator> m = new HashMap<>();
        for (int i = 0; i < nameValue.length; i += 2) {
            m.put(nameValue[i], new StringByteIterator(nameValue[i + 1]));
        }
        return m;
    }

    /** kvbench's serialised record: u32 name length, name, u32 value length, value, in field order. */
    static byte[] expected(String... nameValue) {
        ByteBuffer b = ByteBuffer.allocate(4096);
        for (int i = 0; i < nameValue.length; i += 2) {
            byte[] n = nameValue[i].getBytes(StandardCharsets.UTF_8);
            byte[] v = nameValue[i + 1].getBytes(StandardCharsets.UTF_8);
            b.putInt(n.length).put(n).putInt(v.length).put(v);
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** The expected bytes where the worker finds them: native memory, as the core's block. */
    static MemorySegment offHeap(Arena a, byte[] bytes) {
        return a.allocate(bytes.length).copyFrom(MemorySegment.ofArray(bytes));
    }

    @Test
    void a_record_whose_field_names_change_is_ordered_again_not_written_in_the_last_order() {
        YcsbEngine.Record r = new YcsbEngine.Record();
        assertArrayEquals(expected("field2", "c", "field10", "k"),
                bytes(r.load(fields("field10", "k", "field2", "c")).serialised()));
        // The same names again: the kept order, the new values.
        assertArrayEquals(expected("field2", "x", "field10", "yy"),
                bytes(r.load(fields("field2", "x", "field10", "yy")).serialised()));
        // As many fields, one name different: ordered again.
        assertArrayEquals(expected("field1", "a", "field2", "b"),
                bytes(r.load(fields("field2", "b", "field1", "a")).serialised()));
        // Fewer fields, and more: each written whole, nothing left from the last.
        assertArrayEquals(expected("field0", "z"), bytes(r.load(fields("field0", "z")).serialised()));
        assertArrayEquals(expected("field0", "p", "field1", "q", "field9", "r"),
                bytes(r.load(fields("field9", "r", "field0", "p", "field1", "q")).serialised()));
    }

    @Test
    void fields_match_in_place_only_the_exact_bytes_they_serialise_to() {
        YcsbEngine.Record r = new YcsbEngine.Record();
        try (Arena a = Arena.ofConfined()) {
            r.load(fields("field1", "bb", "field0", "a"));
            assertTrue(r.matches(offHeap(a, expected("field0", "a", "field1", "bb"))));
            assertTrue(r.matches(offHeap(a, bytes(r.serialised()))));
            // A value differs, in a byte or in its length.
            assertFalse(r.matches(offHeap(a, expected("field0", "a", "field1", "bc"))));
            assertFalse(r.matches(offHeap(a, expected("field0", "a", "field1", "b"))));
            assertFalse(r.matches(offHeap(a, expected("field0", "a", "field1", "bbb"))));
            // A name differs; a field is missing, or one more is expected; the bytes end early.
            assertFalse(r.matches(offHeap(a, expected("field0", "a", "field2", "bb"))));
            assertFalse(r.matches(offHeap(a, expected("field0", "a"))));
            assertFalse(r.matches(offHeap(a, expected("field0", "a", "field1", "bb", "field2", "c"))));
            byte[] whole = expected("field0", "a", "field1", "bb");
            assertFalse(r.matches(offHeap(a, java.util.Arrays.copyOf(whole, whole.length - 1))));
            assertFalse(r.matches(offHeap(a, new byte[0])));
            // A record of no fields matches no bytes only.
            r.load(fields());
            assertTrue(r.matches(offHeap(a, new byte[0])));
            assertFalse(r.matches(offHeap(a, expected("field0", "a"))));
        }
    }
}
