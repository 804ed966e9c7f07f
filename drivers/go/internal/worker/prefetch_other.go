//go:build !amd64

package worker

// warm asks the CPU to bring a value into cache ahead of its check (a no-op off amd64).
func warm([]byte) {}
