package worker

// warm asks the CPU to bring an expected value into cache before the engine call, so that
// checking it afterwards does not wait for memory (a value of the 1 MiB pool is a cache miss
// at random). A prefetch is a hint: it blocks nothing, and no fence waits for it.
func warm(b []byte) {
	if len(b) > 0 {
		prefetch(&b[0])
		prefetch(&b[len(b)-1])
	}
}
