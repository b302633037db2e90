package execpages

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mapsLimit bounds the read of /proc/self/maps (a Go process has a few dozen lines).
const mapsLimit = 1 << 20

// Drop releases this process's read-only mappings of its own executable (code, read-only
// data, the symbol tables the runtime reads). Writable mappings are never touched: a
// private page the process wrote would be reset to the file's contents.
func Drop() (Stats, error) {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return Stats{}, fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return Stats{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	defer f.Close()
	var ranges [][2]uint64
	sc := bufio.NewScanner(io.LimitReader(f, mapsLimit)) // a cut list only releases less
	for sc.Scan() {
		if lo, hi, ok := readOnlyMappingOf(sc.Text(), exe); ok {
			ranges = append(ranges, [2]uint64{lo, hi})
		}
	}
	if err := sc.Err(); err != nil {
		return Stats{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	var st Stats
	for _, r := range ranges {
		// Through the raw call: the range is not Go memory, so it is not a []byte either.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r[0]), uintptr(r[1]-r[0]), unix.MADV_DONTNEED); errno != 0 {
			return st, fmt.Errorf("release the executable's pages at %#x: %w", r[0], errno)
		}
		st.Mappings++
		st.Bytes += int64(r[1] - r[0])
	}
	return st, nil
}

// readOnlyMappingOf parses one line of /proc/self/maps ("start-end perms offset major:minor
// inode path") and reports the range when it maps exe and is not writable.
func readOnlyMappingOf(line string, exe unix.Stat_t) (lo, hi uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) != 4 || f[1][0] != 'r' || f[1][1] != '-' {
		return 0, 0, false
	}
	span := strings.SplitN(f[0], "-", 2)
	dev := strings.SplitN(f[3], ":", 2)
	if len(span) != 2 || len(dev) != 2 {
		return 0, 0, false
	}
	ino, err1 := strconv.ParseUint(f[4], 10, 64)
	major, err2 := strconv.ParseUint(dev[0], 16, 32)
	minor, err3 := strconv.ParseUint(dev[1], 16, 32)
	lo, err4 := strconv.ParseUint(span[0], 16, 64)
	hi, err5 := strconv.ParseUint(span[1], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || hi <= lo {
		return 0, 0, false
	}
	if ino != exe.Ino || uint32(major) != unix.Major(exe.Dev) || uint32(minor) != unix.Minor(exe.Dev) {
		return 0, 0, false
	}
	return lo, hi, true
}
