package kvbench.worker;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** The calling thread's sleeps without timer slack. */
final class Timer {
    private Timer() {}

    private static final int PR_SET_TIMERSLACK = 29;
    private static final MethodHandle PRCTL = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("prctl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            Linker.Option.firstVariadicArg(1));

    /**
     * The kernel lets a sleep run its slack (50 µs) late, which an open loop would count as
     * latency: a Java thread is one kernel thread, so setting it once per thread holds.
     */
    static void noSlack() {
        try {
            int ignored = (int) PRCTL.invokeExact(PR_SET_TIMERSLACK, 1L, 0L, 0L, 0L);
        } catch (Throwable t) {
            // slack stays the default: open-loop waits may end up to 50 µs late
        }
    }
}
