package kvbench.worker;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The untimed JIT warm-up, before the job's first step: the engine's Java code (and the JNI or
 * FFM stubs under it) runs for a stated time on a scratch store of its own, beside the job's
 * directory and removed after, so that the job's steps run compiled code rather than the
 * interpreter's. The job's own store never sees it.
 */
final class Warmup {
    private Warmup() {}

    /** What the warm-up did, in words, for the open step's settings. */
    static String run(Descriptor d, OpenArgs args, long ms) throws Exception {
        if (ms <= 0) {
            return "none";
        }
        Path parent = args.dir().toAbsolutePath().getParent();
        Path dir = Files.createTempDirectory(parent != null && Files.isWritable(parent) ? parent : Path.of(
                System.getProperty("java.io.tmpdir")), ".kvbench-java-warmup-");
        long writes = 0, gets = 0, scans = 0;
        long opened = System.nanoTime();
        long t0, t1;
        try (Engine e = d.open().open(args.withDir(dir).withMode("read-write"))) {
            ByteBuffer key = ByteBuffer.allocateDirect(16);
            byte[] value = new byte[100];
            Batch batch = new Batch();
            t0 = System.nanoTime();
            long deadline = t0 + ms * 1_000_000L;
            for (long round = 0; System.nanoTime() < deadline; round++) {
                batch.clear();
                for (int i = 0; i < 100; i++) {
                    batch.put(key((round * 100 + i) % 10_000), ByteBuffer.wrap(value));
                }
                e.write(batch);
                writes += 100;
                try (Engine.Reader rd = e.reader()) {
                    for (int i = 0; i < 1000; i++) {
                        key.clear();
                        key.put(key((round * 7919 + i) % 10_000)).flip();
                        rd.get(key);
                        gets++;
                    }
                    if (d.caps().scan()) {
                        rd.scan(key(round % 10_000), 20, (k, v) -> true);
                        scans++;
                    }
                }
            }
            t1 = System.nanoTime();
        } finally {
            remove(dir);
        }
        long ran = (t1 - t0) / 1_000_000;
        return String.format("%d ms untimed on a scratch store before the job's first step (after its open, "
                + "%d ms): %d writes, %d gets, %d scans", ran, (t0 - opened) / 1_000_000, writes, gets, scans);
    }

    private static ByteBuffer key(long i) {
        return ByteBuffer.wrap(String.format("%016d", i).getBytes(StandardCharsets.US_ASCII));
    }

    static void remove(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
