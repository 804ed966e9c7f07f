package kvbench.worker;

import java.util.Map;
import java.util.TreeMap;

/**
 * Hands the engine's internals and the JVM's counters to the core every interval of an ops
 * step, from a thread of its own (never a timed one), until stopped.
 */
final class Sampler {
    private final Thread thread;
    private volatile boolean quit;

    Sampler(Runner r, long intervalMs, long start) {
        if (intervalMs <= 0) {
            thread = null;
            return;
        }
        thread = new Thread(() -> {
            long next = start + intervalMs * 1_000_000L;
            while (!quit) {
                long left = next - System.nanoTime();
                if (left > 0) {
                    java.util.concurrent.locks.LockSupport.parkNanos(left);
                    continue;
                }
                Map<String, Double> values = new TreeMap<>(r.eng == null ? Map.of() : r.eng.internals());
                values.putAll(r.jvm.sample());
                r.handIn(values, System.nanoTime() - start);
                next += intervalMs * 1_000_000L;
            }
        }, "kvbench-sampler");
        thread.setDaemon(true);
        thread.start();
    }

    /** Returns once the sampling thread has ended. */
    void stop() {
        if (thread == null) {
            return;
        }
        quit = true;
        java.util.concurrent.locks.LockSupport.unpark(thread);
        Runner.joinQuietly(thread);
    }
}
