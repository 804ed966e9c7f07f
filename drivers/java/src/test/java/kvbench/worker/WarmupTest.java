package kvbench.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;

class WarmupTest {
    private static JsonObject ops(String kind, String extra) {
        return JsonParser.parseString("{\"step\":\"ops\",\"index\":0,\"name\":\"" + kind + "\",\"kind\":\"" + kind
                + "\",\"count\":1000000,\"dist\":{\"name\":\"zipfian\",\"n\":100000},\"rec_seed\":1" + extra + "}")
                .getAsJsonObject();
    }

    /**
     * The warm-up runs the job's steps that read or update loaded records (a mix of gets and
     * updates at two threads compiled the paths YCSB A runs; a warm-up of gets alone left them
     * to the timed step), small, unpaced and without a stop rule; none that needs records it did
     * not load, replays a plan or opens the engine per op.
     */
    @Test
    void regression_the_warmup_runs_the_jobs_steps_that_it_can() {
        JsonArray steps = new JsonArray();
        steps.add(ops("load", ""));
        steps.add(ops("mixed", ",\"kinds\":[\"get\",\"update\"],\"thresholds\":[1,2],\"threads\":2,\"rate\":500.0,"
                + "\"duration_ms\":60000,\"field_updates\":true"));
        steps.add(ops("mixed", ",\"kinds\":[\"get\",\"insert\"],\"thresholds\":[1,2]"));
        steps.add(ops("get", ",\"open_per_op\":true"));
        steps.add(ops("rmw", ",\"replay\":{\"by_client\":false}"));
        steps.add(ops("delete", ""));
        JsonObject job = new JsonObject();
        job.add("steps", steps);
        JsonArray out = new JsonArray();
        out.add(new JsonObject());
        assertEquals(2, Warmup.addJobSteps(job, out));
        JsonObject mixed = out.get(1).getAsJsonObject();
        assertEquals(1, mixed.get("index").getAsInt());
        assertEquals(Warmup.GETS, mixed.get("count").getAsLong());
        assertEquals(2, mixed.get("threads").getAsInt());
        assertEquals("uniform", mixed.getAsJsonObject("dist").get("name").getAsString());
        assertEquals(Warmup.RECORDS, mixed.getAsJsonObject("dist").get("n").getAsLong());
        assertEquals(Warmup.RECORDS - 1, mixed.get("last").getAsLong());
        assertFalse(mixed.has("rate") || mixed.has("duration_ms"), mixed.toString());
        assertEquals(true, mixed.get("field_updates").getAsBoolean());
        assertEquals("delete", out.get(2).getAsJsonObject().get("kind").getAsString());
        assertEquals(1000000, steps.get(1).getAsJsonObject().get("count").getAsLong(), "the job's step is as it was");
    }
}
