package worker

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Usage is what the operating system tells about this process.
type Usage struct {
	UserNs, SysNs, MaxRssKb, ReadBytes, WriteBytes uint64
}

// UsageNow reads getrusage(RUSAGE_SELF) and /proc/self/io.
func UsageNow() Usage {
	var ru syscall.Rusage
	u := Usage{}
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.UserNs = uint64(ru.Utime.Sec)*1_000_000_000 + uint64(ru.Utime.Usec)*1000
		u.SysNs = uint64(ru.Stime.Sec)*1_000_000_000 + uint64(ru.Stime.Usec)*1000
		u.MaxRssKb = uint64(ru.Maxrss)
	}
	u.ReadBytes, u.WriteBytes = procIO()
	return u
}

func procIO() (uint64, uint64) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var r, w uint64
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, _ := strings.Cut(s.Text(), ":")
		n, _ := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		switch strings.TrimSpace(name) {
		case "read_bytes":
			r = n
		case "write_bytes":
			w = n
		}
	}
	return r, w
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func fillUsage(r *PhaseResult, before Usage) {
	after := UsageNow()
	r.CPUUserNs = sub(after.UserNs, before.UserNs)
	r.CPUSysNs = sub(after.SysNs, before.SysNs)
	r.MaxRssKb = after.MaxRssKb
	r.IOReadBytes = sub(after.ReadBytes, before.ReadBytes)
	r.IOWriteBytes = sub(after.WriteBytes, before.WriteBytes)
}

// Evict writes back and evicts every file below dir from the page cache with
// posix_fadvise(DONTNEED) (no root needed). Returns how many files were evicted.
func Evict(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_ = f.Sync() // dirty pages cannot be dropped: write them back first
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
