//go:build !amd64

package worker

func prefetch(*byte) {}
