package kvbench.worker;

import com.sun.management.GarbageCollectionNotificationInfo;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * The JVM's own counters for the result: garbage-collection pauses (from the collectors'
 * notifications, one per collection, as they happen), heap and off-heap memory, and
 * allocation. Step totals go in the step's `runtime` counters; the same counters, sampled every
 * interval of an ops step beside the engine's internals, make the series the timeline shows
 * beside latency.
 */
final class Jvm implements AutoCloseable {
    private final AtomicLong pauses = new AtomicLong();
    private final AtomicLong pauseNs = new AtomicLong();
    private final AtomicLong maxPauseNs = new AtomicLong();
    private final List<Runnable> unsubscribe = new ArrayList<>();

    Jvm() {
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc instanceof NotificationEmitter em) {
                NotificationListener l = this::onGc;
                em.addNotificationListener(l, null, null);
                unsubscribe.add(() -> {
                    try {
                        em.removeNotificationListener(l);
                    } catch (Exception e) {
                        // already gone
                    }
                });
            }
        }
    }

    /**
     * One collection. Concurrent cycles (G1's "Concurrent GC", ZGC's "Cycles") run beside the
     * application: only stop-the-world pauses count.
     */
    private void onGc(Notification n, Object handback) {
        if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
            return;
        }
        var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
        if (info.getGcName().contains("Concurrent") || info.getGcName().contains("Cycles")) {
            return;
        }
        // The collectors report whole milliseconds.
        long ns = info.getGcInfo().getDuration() * 1_000_000L;
        pauses.incrementAndGet();
        pauseNs.addAndGet(ns);
        maxPauseNs.accumulateAndGet(ns, Math::max);
    }

    /** The counters at a step's start. */
    record Mark(long pauses, long pauseNs, long allocated) {}

    Mark mark() {
        maxPauseNs.set(0);
        return new Mark(pauses.get(), pauseNs.get(), allocated());
    }

    /** Every thread's allocated bytes (HotSpot's per-thread counters, summed). */
    static long allocated() {
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t) {
            return t.getTotalThreadAllocatedBytes();
        }
        return 0;
    }

    /** The step's counters: pauses and allocation over the step, memory at its end. */
    void report(Mark m0, Map<String, Double> out) {
        out.put("gc_pauses", (double) (pauses.get() - m0.pauses()));
        out.put("gc_pause_ns", (double) (pauseNs.get() - m0.pauseNs()));
        out.put("gc_pause_max_ns", (double) maxPauseNs.get());
        out.put("alloc_bytes", (double) Math.max(0, allocated() - m0.allocated()));
        out.putAll(memory());
    }

    /** Heap used and committed, non-heap (code cache, metaspace), direct and mapped buffers. */
    static Map<String, Double> memory() {
        Map<String, Double> out = new TreeMap<>();
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        out.put("heap_used_bytes", (double) mem.getHeapMemoryUsage().getUsed());
        out.put("heap_committed_bytes", (double) mem.getHeapMemoryUsage().getCommitted());
        out.put("nonheap_used_bytes", (double) mem.getNonHeapMemoryUsage().getUsed());
        for (BufferPoolMXBean p : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            String name = p.getName().toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z]+", "_")
                    .replaceAll("^_|_$", "");
            out.put(name + "_buffer_bytes", (double) p.getMemoryUsed());
        }
        return out;
    }

    /** The series sample: the pauses so far and memory now, named `jvm.*`. */
    Map<String, Double> sample() {
        Map<String, Double> out = new TreeMap<>();
        out.put("jvm.gc_pauses", (double) pauses.get());
        out.put("jvm.gc_pause_ns", (double) pauseNs.get());
        memory().forEach((k, v) -> out.put("jvm." + k, v));
        return out;
    }

    /** The JVM as hello names it. */
    static String describe() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }

    /** The JVM's settings that matter for the numbers: version, collector, heap limit. */
    static Map<String, String> settings() {
        Map<String, String> out = new TreeMap<>();
        out.put("jvm", describe());
        List<String> gcs = new ArrayList<>();
        ManagementFactory.getGarbageCollectorMXBeans().forEach(g -> gcs.add(g.getName()));
        out.put("jvm.gc", String.join(", ", gcs));
        out.put("jvm.heap_max_bytes", Long.toString(Runtime.getRuntime().maxMemory()));
        return out;
    }

    @Override
    public void close() {
        unsubscribe.forEach(Runnable::run);
    }
}
