package kvbench.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.StringByteIterator;

/** The bytes a ycsb: row hands the core for the fields a binding read. */
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
    void byte_array_iterators_are_read_in_place_from_their_offset_to_their_end() {
        assertTrue(InPlace.enabled(), "YCSB 0.17.0's ByteArrayByteIterator has the fields InPlace reads");
        byte[] all = "..abc..".getBytes(StandardCharsets.UTF_8);
        ByteArrayByteIterator it = new ByteArrayByteIterator(all, 2, 3);
        it.nextByte(); // a binding may hand an iterator it has started on: the rest is its value
        Map<String, ByteIterator> m = new HashMap<>();
        m.put("field0", it);
        m.put("field1", new ByteArrayByteIterator("xyz".getBytes(StandardCharsets.UTF_8)));
        m.put("field2", new StringByteIterator("s"));
        YcsbEngine.Record r = new YcsbEngine.Record();
        assertArrayEquals(expected("field0", "bc", "field1", "xyz", "field2", "s"), bytes(r.load(m).serialised()));
        assertEquals(0, it.bytesLeft(), "read to its end, as toArray leaves it");
        assertArrayEquals(expected("field0", "bc", "field1", "xyz", "field2", "s"), bytes(r.serialised()),
                "asked again: the same bytes, not the iterators' empty rest");
    }

    /** Put straight into the worker's buffer (at its position), a record is the bytes serialised() returns. */
    @Test
    void a_record_put_into_a_buffer_is_what_serialised_returns_and_only_once() {
        YcsbEngine.Record r = new YcsbEngine.Record();
        ByteBuffer to = ByteBuffer.allocateDirect(100).position(7);
        Map<String, ByteIterator> m = new HashMap<>();
        m.put("field1", new ByteArrayByteIterator("xyz".getBytes(StandardCharsets.UTF_8)));
        m.put("field0", new StringByteIterator("ab"));
        int n = r.load(m).length();
        r.writeTo(to);
        byte[] want = expected("field0", "ab", "field1", "xyz");
        assertEquals(want.length, n);
        assertEquals(7 + n, to.position());
        assertArrayEquals(want, bytes(to.flip().position(7)));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, r::serialised,
                "the iterators were read: serialised would hand back empty values");
        // Serialised first, then put: the same bytes.
        r.load(fields("field0", "ab", "field1", "xyz")).serialised();
        ByteBuffer again = ByteBuffer.allocate(100);
        r.writeTo(again);
        assertArrayEquals(want, bytes(again.flip()));
    }

    static List<String> values(Map<String, ByteIterator> m) {
        return m.values().stream().map(v -> new String(v.toArray(), StandardCharsets.UTF_8)).toList();
    }

    @Test
    void a_written_record_is_its_fields_in_order_and_a_repeated_name_is_one_string() {
        YcsbEngine.Fields f = new YcsbEngine.Fields();
        Map<String, ByteIterator> a = f.of(ByteBuffer.wrap(expected("field0", "p", "field1", "qq")));
        assertEquals(List.of("field0", "field1"), List.copyOf(a.keySet()));
        assertEquals(List.of("p", "qq"), values(a));
        // A name that changed is read again; the others are the last record's strings.
        Map<String, ByteIterator> b = f.of(ByteBuffer.wrap(expected("field0", "x", "fïeld", "", "field2", "zzz")));
        assertEquals(List.of("field0", "fïeld", "field2"), List.copyOf(b.keySet()));
        assertEquals(List.of("x", "", "zzz"), values(b));
        assertSame(a.keySet().iterator().next(), b.keySet().iterator().next());
        assertEquals(List.of("field0"), List.copyOf(f.of(ByteBuffer.wrap(expected("field0", "w"))).keySet()));
    }
}
