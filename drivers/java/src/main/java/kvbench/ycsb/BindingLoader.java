package kvbench.ycsb;

import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.stream.Stream;

/**
 * Loads a YCSB binding from its own classpath ({@code $KVBENCH_YCSB_CLASSPATH}, kvbench's
 * {@code --classpath}), child first: a binding built against another rocksdbjni (YCSB 0.17.0's
 * RocksDB binding) gets its own classes and native library, not the worker's. YCSB's core
 * ({@code site.ycsb.*} that the worker has: {@code DB}, {@code Status}, {@code ByteIterator}),
 * kvbench's own classes and the JDK's come from the worker, so the binding is a
 * {@code site.ycsb.DB} the worker can call.
 */
final class BindingLoader extends URLClassLoader {
    /** The variable that carries the binding's classpath to the worker. */
    static final String ENV = "KVBENCH_YCSB_CLASSPATH";

    private static final String[] PARENT_FIRST = {"java.", "javax.", "jdk.", "sun.", "com.sun.", "site.ycsb.",
        "kvbench.", "org.w3c.", "org.xml."};

    BindingLoader(List<URL> urls, ClassLoader parent) {
        super("ycsb-binding", urls.toArray(new URL[0]), parent);
    }

    /** A loader over the classpath text (entries split by ':'; `DIR/*` is every jar in DIR). */
    static BindingLoader of(String classpath, ClassLoader parent) throws IOException {
        List<URL> urls = new ArrayList<>();
        for (String entry : classpath.split(":")) {
            if (entry.isEmpty()) {
                continue;
            }
            if (entry.endsWith("/*") || entry.equals("*")) {
                Path dir = Path.of(entry.substring(0, entry.length() - 1));
                if (!Files.isDirectory(dir)) {
                    throw new IOException(ENV + " entry `" + entry + "`: " + dir + " is no directory");
                }
                try (Stream<Path> jars = Files.list(dir)) {
                    for (Path j : jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                        urls.add(url(j));
                    }
                }
            } else {
                Path p = Path.of(entry);
                if (!Files.exists(p)) {
                    throw new IOException(ENV + " entry `" + entry + "` does not exist");
                }
                urls.add(url(p));
            }
        }
        return new BindingLoader(urls, parent);
    }

    private static URL url(Path p) throws MalformedURLException {
        return p.toAbsolutePath().toUri().toURL();
    }

    private static boolean parentFirst(String name) {
        for (String p : PARENT_FIRST) {
            if (name.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null && parentFirst(name)) {
                c = fromParent(name);
            }
            if (c == null) {
                try {
                    c = findClass(name);
                } catch (ClassNotFoundException e) {
                    c = getParent().loadClass(name);
                }
            }
            if (resolve) {
                resolveClass(c);
            }
            return c;
        }
    }

    private Class<?> fromParent(String name) {
        try {
            return getParent().loadClass(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /** Resources child first too: a JNI library's classes find their own native library. */
    @Override
    public URL getResource(String name) {
        URL u = findResource(name);
        return u != null ? u : getParent().getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        List<URL> all = new ArrayList<>(Collections.list(findResources(name)));
        all.addAll(Collections.list(getParent().getResources(name)));
        return Collections.enumeration(all);
    }
}
