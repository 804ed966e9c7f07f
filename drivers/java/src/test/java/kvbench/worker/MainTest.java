package kvbench.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The worker's command-line environment. */
class MainTest {
    @Test
    void a_warmup_length_outside_0_to_600000_ms_is_refused_and_unset_is_the_default() {
        assertEquals(Main.WARMUP_MS, Main.warmupMs(null));
        assertEquals(Main.WARMUP_MS, Main.warmupMs(""));
        assertEquals(250, Main.warmupMs("250"));
        assertEquals(0, Main.warmupMs("0"));
        assertEquals(-1, Main.warmupMs("-5"));
        assertEquals(-1, Main.warmupMs("600001"));
        assertEquals(-1, Main.warmupMs("1s"));
        assertEquals(-1, Main.warmupMs("99999999999999999999"));
    }
}
