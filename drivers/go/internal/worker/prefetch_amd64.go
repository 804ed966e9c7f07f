package worker

// warm asks the CPU to bring a value into cache ahead of its check: an expected value before
// the engine call (a value of the 1 MiB pool is a cache miss at random), the value read while
// the next op is prepared. A prefetch is a hint: it blocks nothing and never faults. Every
// cache line the value spans is asked for (a value that straddles three lines, as most
// 100-byte values do, would otherwise leave its middle line, which the comparison reads
// first, to a miss), up to the first 512 bytes: past them the comparison walks the value
// in order, which the hardware's own prefetcher follows. Assembly is never inlined: one
// call per value.
//
//go:noescape
func warm(b []byte)
