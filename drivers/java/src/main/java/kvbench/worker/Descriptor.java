package kvbench.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What one registry line points at: the engine's name, what it can do, its options and how to
 * open it.
 *
 * @param unavailable null when the engine can run here, else why not
 */
public record Descriptor(String name, String description, Caps caps, List<OptionSpec> options,
        Supplier<String> version, Supplier<String> unavailable, Opener open) {

    /** Opens the engine's database. */
    public interface Opener {
        Engine open(OpenArgs args) throws Exception;
    }

    /** Capabilities, as the Rust Capabilities. */
    public record Caps(boolean scan, boolean multiGet, boolean batch, boolean readOnly, boolean secondary,
            boolean persistent, boolean buildOnce, boolean delete, boolean fieldUpdate) {
        /** An engine that stores values as given (no field-update). */
        public Caps(boolean scan, boolean multiGet, boolean batch, boolean readOnly, boolean secondary,
                boolean persistent, boolean buildOnce, boolean delete) {
            this(scan, multiGet, batch, readOnly, secondary, persistent, buildOnce, delete, false);
        }

        /** The names in Capabilities::names() order. */
        public List<String> names() {
            List<String> out = new ArrayList<>();
            boolean[] on = {scan, multiGet, batch, readOnly, secondary, persistent, buildOnce, delete, fieldUpdate};
            String[] names = {"scan", "multi-get", "batch", "read-only", "secondary", "persistent", "build-once",
                "delete", "field-update"};
            for (int i = 0; i < on.length; i++) {
                if (on[i]) {
                    out.add(names[i]);
                }
            }
            return out;
        }
    }

    /** One option as --list declares it to kvbench (kind: bool, int, enum, text). */
    public record OptionSpec(String name, String kind, String defaultValue, String doc, List<String> choices) {
        public static OptionSpec of(String name, String kind, String defaultValue, String doc) {
            return new OptionSpec(name, kind, defaultValue, doc, List.of());
        }
    }

    /** The --list entry. */
    public Map<String, Object> listEntry() {
        String why = unavailable.get();
        List<Map<String, Object>> opts = new ArrayList<>();
        for (OptionSpec o : options) {
            Map<String, Object> m = new java.util.LinkedHashMap<>();
            m.put("name", o.name());
            m.put("kind", o.kind());
            m.put("default", o.defaultValue());
            m.put("doc", o.doc());
            if (!o.choices().isEmpty()) {
                m.put("choices", o.choices());
            }
            opts.add(m);
        }
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("name", name);
        m.put("description", description);
        m.put("version", version.get());
        m.put("capabilities", caps.names());
        m.put("options", opts);
        m.put("available", why == null);
        m.put("why", why == null ? "" : why);
        return m;
    }
}
