// Package cpu holds what Go cannot say without assembly (a cgo package cannot hold any).
package cpu
