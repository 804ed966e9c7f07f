package kvbench.engines;

import java.util.List;

import kvbench.worker.Descriptor;
import kvbench.ycsb.YcsbEngine;

/** The Java engines, one file each; --list shows them in this order. */
public final class Registry {
    private Registry() {}

    public static final List<Descriptor> ALL = List.of(RocksDbEngine.DESCRIPTOR, LmdbEngine.DESCRIPTOR,
            MvStoreEngine.DESCRIPTOR, BdbJeEngine.DESCRIPTOR, XodusEngine.DESCRIPTOR, MapDbEngine.DESCRIPTOR,
            ChronicleMapEngine.DESCRIPTOR, MemoryEngine.DESCRIPTOR);

    /** The engine named name (a YCSB binding when it is ycsb:CLASS), or null. */
    public static Descriptor find(String name) {
        if (name.startsWith(YcsbEngine.PREFIX)) {
            return YcsbEngine.find(name);
        }
        return ALL.stream().filter(d -> d.name().equals(name)).findFirst().orElse(null);
    }

    /** null when the class loads, else why not (a missing or broken native library). */
    static String loads(Runnable probe) {
        try {
            probe.run();
            return null;
        } catch (Throwable t) {
            return t.getClass().getSimpleName() + ": " + t.getMessage();
        }
    }
}
