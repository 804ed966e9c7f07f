package kvbench.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/** The binding as YCSB's Client uses it: two client threads' DBs share the store. */
class KvbenchBindingTest {
    static DB open(Path dir) throws Exception {
        DB db = new KvbenchBinding();
        Properties p = new Properties();
        p.setProperty("kvbench.engine", "java-lmdb");
        p.setProperty("kvbench.dir", dir.toString());
        db.setProperties(p);
        db.init();
        return db;
    }

    static Map<String, ByteIterator> record(int i) {
        Map<String, String> f = new HashMap<>();
        for (int j = 0; j < 10; j++) {
            f.put("field" + j, "v" + i + "." + j);
        }
        return StringByteIterator.getByteIteratorMap(f);
    }

    @Test
    void ycsb_operations_read_back_what_another_client_thread_wrote(@TempDir Path dir) throws Exception {
        DB a = open(dir);
        DB b = open(dir);
        for (int i = 0; i < 20; i++) {
            assertEquals(Status.OK, a.insert("usertable", String.format("user%02d", i), record(i)));
        }
        Map<String, ByteIterator> got = new HashMap<>();
        assertEquals(Status.OK, b.read("usertable", "user07", null, got));
        assertEquals(10, got.size());
        assertArrayEquals("v7.3".getBytes(), got.get("field3").toArray());
        assertEquals(Status.OK, a.update("usertable", "user07",
                StringByteIterator.getByteIteratorMap(Map.of("field3", "new"))));
        got.clear();
        assertEquals(Status.OK, b.read("usertable", "user07", Set.of("field3", "field4"), got));
        assertEquals(Map.of("field3", "new", "field4", "v7.4"), StringByteIterator.getStringMap(got));
        Vector<HashMap<String, ByteIterator>> scanned = new Vector<>();
        assertEquals(Status.OK, b.scan("usertable", "user15", 10, Set.of("field0"), scanned));
        assertEquals(5, scanned.size(), "user15 .. user19");
        assertArrayEquals("v15.0".getBytes(), scanned.get(0).get("field0").toArray());
        assertEquals(Status.OK, a.delete("usertable", "user07"));
        assertEquals(Status.NOT_FOUND, b.read("usertable", "user07", null, new HashMap<>()));
        a.cleanup();
        b.cleanup();
    }
}
