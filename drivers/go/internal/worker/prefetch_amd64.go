package worker

// warm asks the CPU to bring a value into cache ahead of its check: an expected value before
// the engine call (a value of the 1 MiB pool is a cache miss at random), the value read while
// the next op is prepared. A prefetch is a hint: it blocks nothing and never faults. Its
// first and last bytes are fetched in one call (assembly is never inlined).
//
//go:noescape
func warm(b []byte)
