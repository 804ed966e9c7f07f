package kvbench.worker;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import kvbench.engines.Registry;

/**
 * kvbench's Java worker (drivers/java/README.md).
 *
 * <pre>
 *   kvbench-java-worker --job JOB   run one job, JSON Lines events on stdout (docs/protocol.md)
 *   kvbench-java-worker --list      the Java engines as a JSON array
 * </pre>
 *
 * $KVBENCH_JAVA_WARMUP_MS sets the untimed warm-up's least length (default 1000; it goes on while
 * the JIT is busy, up to five times that). Exit status: 0 after a
 * `done` event, 1 after an `error` event, 2 for a bad command line.
 */
public final class Main {
    private Main() {}

    /** Default length of the untimed JIT warm-up. */
    static final long WARMUP_MS = 1000;

    public static void main(String[] argv) throws Throwable {
        if (argv.length == 1 && argv[0].equals("--list")) {
            List<Map<String, Object>> out = new ArrayList<>();
            Registry.ALL.forEach(d -> out.add(d.listEntry()));
            System.out.println(Runner.GSON.newBuilder().setPrettyPrinting().create().toJson(out));
            return;
        }
        if (argv.length != 2 || !argv[0].equals("--job")) {
            System.err.println("usage: kvbench-java-worker --job JOB | --list");
            System.exit(2);
        }
        int fd = protocolStdout();
        String env = System.getenv("KVBENCH_JAVA_WARMUP_MS");
        long warmup = warmupMs(env);
        if (warmup < 0) {
            System.err.println("KVBENCH_JAVA_WARMUP_MS: want milliseconds from 0 to 600000, got '" + env + "'");
            System.exit(2);
        }
        boolean ok = Runner.run(Path.of(argv[1]), fd, Registry::find, warmup);
        System.exit(ok ? 0 : 1);
    }

    /** The warm-up's least length from $KVBENCH_JAVA_WARMUP_MS (unset or empty: the default); -1 when
     * it is not a whole number of milliseconds from 0 to 600000. */
    static long warmupMs(String env) {
        if (env == null || env.isEmpty()) {
            return WARMUP_MS;
        }
        try {
            long ms = Long.parseLong(env.trim());
            return ms >= 0 && ms <= 600_000 ? ms : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Keeps stdout for events only: returns a duplicate of file descriptor 1 for them, and
     * anything else written to descriptor 1 (a library's native prints, System.out) goes to
     * stderr instead.
     */
    static int protocolStdout() throws Throwable {
        int fd = (int) Core.DUP.invokeExact(1);
        if (fd < 0) {
            return 1;
        }
        int ignored = (int) Core.DUP2.invokeExact(2, 1);
        System.setOut(System.err);
        return fd;
    }
}
