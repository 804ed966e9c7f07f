package kvbench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;

import kvbench.engines.Registry;
import kvbench.worker.Batch;
import kvbench.worker.Descriptor;
import kvbench.worker.Engine;
import kvbench.worker.OpenArgs;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Conformance, as every engine has it (the Rust engines' conformance.rs, the Go engines'
 * TestConformanceAgainstAMap): random puts (empty values included), deletes and batches on
 * every Java engine with a sorted map as the oracle; every get and (where declared) every
 * ordered scan must agree, before and after a reopen.
 */
class ConformanceTest {
    static Stream<Descriptor> engines() {
        return Registry.ALL.stream();
    }

    static OpenArgs args(Path dir, String sync) {
        return new OpenArgs(dir, new HashMap<>(), sync, "read-write", 0, 0, "", "");
    }

    static ByteBuffer direct(byte[] b) {
        ByteBuffer d = ByteBuffer.allocateDirect(b.length);
        d.put(b).flip();
        return d;
    }

    /** Keys from 250 on start with byte 0xE0: they sort after every `k...` key only in
     * unsigned byte order, the order kvbench's scans check. */
    static byte[] key(int i) {
        byte[] k = String.format("k%03d", i).getBytes(StandardCharsets.US_ASCII);
        if (i >= 250) {
            k[0] = (byte) 0xE0;
        }
        return k;
    }

    static String name(byte[] k) {
        return new String(k, StandardCharsets.ISO_8859_1);
    }

    @ParameterizedTest
    @MethodSource("engines")
    void every_engine_agrees_with_a_sorted_map(Descriptor d, @TempDir Path dir) throws Exception {
        Random rng = new Random(4);
        TreeMap<byte[], byte[]> oracle = new TreeMap<>(Arrays::compareUnsigned);
        try (Engine e = d.open().open(args(dir, "none"))) {
            for (int round = 0; round < 60; round++) {
                Batch b = new Batch();
                Map<String, byte[]> applied = new java.util.LinkedHashMap<>();
                int n = 1 + rng.nextInt(20);
                for (int i = 0; i < n; i++) {
                    byte[] k = key(rng.nextInt(300));
                    if (rng.nextInt(5) == 0) {
                        b.delete(direct(k));
                        applied.put(name(k), null);
                    } else {
                        byte[] v = new byte[rng.nextInt(3) * rng.nextInt(700)];
                        rng.nextBytes(v);
                        b.put(direct(k), direct(v));
                        applied.put(name(k), v);
                    }
                }
                e.write(b);
                applied.forEach((k, v) -> {
                    byte[] kb = k.getBytes(StandardCharsets.ISO_8859_1);
                    if (v == null) {
                        oracle.remove(kb);
                    } else {
                        oracle.put(kb, v);
                    }
                });
            }
            check(d, e, oracle, "open");
        }
        if (!d.caps().persistent()) {
            return;
        }
        try (Engine e = d.open().open(args(dir, "none"))) {
            check(d, e, oracle, "reopened");
        }
    }

    private static void check(Descriptor d, Engine e, TreeMap<byte[], byte[]> oracle, String when) throws Exception {
        try (Engine.Reader r = e.reader()) {
            for (int i = 0; i < 300; i++) {
                ByteBuffer v = r.get(direct(key(i)));
                byte[] want = oracle.get(key(i));
                if (want == null) {
                    assertNull(v, when + ": get " + i + " found a deleted or never written key");
                } else {
                    assertArrayEquals(want, Engine.bytes(v), when + ": get " + i);
                }
            }
            List<byte[]> keys = new ArrayList<>(oracle.keySet());
            if (!d.caps().scan()) {
                assertThrows(Engine.Unsupported.class, () -> r.scan(direct(keys.get(0)), 50, (k, v) -> true));
                return;
            }
            // From a third of the way, and from k240 across the 0xE0 keys.
            for (byte[] from : List.of(keys.get(keys.size() / 3), key(240))) {
                scan(r, oracle, from, when);
            }
        }
    }

    private static void scan(Engine.Reader r, TreeMap<byte[], byte[]> oracle, byte[] from, String when)
            throws Exception {
        List<String> got = new ArrayList<>();
        long n = r.scan(direct(from), 50, (k, v) -> {
            byte[] kb = Engine.bytes(k);
            assertArrayEquals(oracle.get(kb), Engine.bytes(v), when + ": scan value of " + name(kb));
            got.add(name(kb));
            return true;
        });
        List<String> want = oracle.tailMap(from).keySet().stream().limit(50).map(ConformanceTest::name).toList();
        assertEquals(want, got, when + ": scan from " + name(from));
        assertEquals(want.size(), n, when + ": scan count");
    }

    /** The list kvbench reads: every option's kind is one kvbench knows, and an enum's
     * default is one of its choices. */
    @ParameterizedTest
    @MethodSource("engines")
    void every_engine_declares_options_kvbench_can_check(Descriptor d) {
        Map<String, Object> entry = d.listEntry();
        assertEquals(true, entry.get("available"), d.name() + ": " + entry.get("why"));
        for (Descriptor.OptionSpec o : d.options()) {
            assertInstanceOf(String.class, o.kind());
            assertEquals(true, List.of("bool", "int", "enum", "text").contains(o.kind()), o.name() + ": " + o.kind());
            if (o.kind().equals("enum")) {
                assertEquals(true, o.choices().contains(o.defaultValue()), o.name());
            }
        }
    }
}
