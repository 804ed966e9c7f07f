package kvbench.worker;

import java.nio.file.Path;
import java.util.Map;

/**
 * Everything an engine needs to open its database. Options are as kvbench resolved them
 * (docs/protocol.md): every option of the engine, null where unset, integers for sizes.
 *
 * @param sync none, commit or always
 * @param mode read-write, read-only or secondary
 */
public record OpenArgs(Path dir, Map<String, Object> options, String sync, String mode, long expectedRecords,
        long expectedBytes, String url, String token) {

    public OpenArgs withMode(String m) {
        return new OpenArgs(dir, options, sync, m, expectedRecords, expectedBytes, url, token);
    }

    public OpenArgs withDir(Path d) {
        return new OpenArgs(d, options, sync, mode, expectedRecords, expectedBytes, url, token);
    }

    /** A boolean option (false when unset). */
    public boolean bool(String name) {
        return options.get(name) instanceof Boolean b && b;
    }

    /** An integer option, or dflt when unset (the engine's own default). */
    public long integer(String name, long dflt) {
        return options.get(name) instanceof Number n ? n.longValue() : dflt;
    }

    /** An enum or text option ("" when unset). */
    public String text(String name) {
        Object v = options.get(name);
        return v == null ? "" : v.toString();
    }

    public boolean readOnly() {
        return !"read-write".equals(mode);
    }
}
