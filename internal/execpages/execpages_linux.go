package execpages

import (
	"bufio"
	"debug/elf"
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
// private page the process wrote would be reset to the file's contents. Neither are pages
// the dynamic loader wrote before making them read-only (a position-independent or
// externally linked build: `go build -buildmode=pie`, as Linux distributions package Go
// programs): reset, their relocated pointers would point at nothing.
func Drop() (Stats, error) {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return Stats{}, fmt.Errorf("find the executable: %w", err)
	}
	relocated, all, err := relocatedRanges("/proc/self/exe")
	if err != nil {
		return Stats{}, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return Stats{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	defer f.Close()
	var st Stats
	var ranges []mapping
	sc := bufio.NewScanner(io.LimitReader(f, mapsLimit)) // a cut list only releases less
	for sc.Scan() {
		m, ok := readOnlyMappingOf(sc.Text(), exe)
		if !ok {
			continue
		}
		if all || m.overlaps(relocated) {
			st.Kept++
			continue
		}
		ranges = append(ranges, m)
	}
	if err := sc.Err(); err != nil {
		return Stats{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	for _, r := range ranges {
		// Through the raw call: the range is not Go memory, so it is not a []byte either.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r.lo), uintptr(r.hi-r.lo), unix.MADV_DONTNEED); errno != 0 {
			return st, fmt.Errorf("release the executable's pages at %#x: %w", r.lo, errno)
		}
		st.Mappings++
		st.Bytes += int64(r.hi - r.lo)
	}
	return st, nil
}

// mapping is a read-only mapping of the executable: its addresses and the file offset it
// starts at.
type mapping struct{ lo, hi, off uint64 }

// overlaps reports whether the part of the file m maps overlaps one of the file ranges.
func (m mapping) overlaps(ranges [][2]uint64) bool {
	end := m.off + (m.hi - m.lo)
	for _, r := range ranges {
		if m.off < r[1] && r[0] < end {
			return true
		}
	}
	return false
}

// relocatedRanges reads the executable's program headers: the file ranges (whole pages)
// the dynamic loader may write before it makes them read-only (PT_GNU_RELRO), or all when
// it may write the code itself (text relocations). A binary with no dynamic section (what
// `make build` makes: static, not position-independent) has none.
func relocatedRanges(path string) (ranges [][2]uint64, all bool, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("read the executable's headers: %w", err)
	}
	defer f.Close()
	dynamic := false
	page := uint64(os.Getpagesize())
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_DYNAMIC:
			dynamic = true
		case elf.PT_GNU_RELRO:
			ranges = append(ranges, [2]uint64{p.Off &^ (page - 1), (p.Off + p.Filesz + page - 1) &^ (page - 1)})
		}
	}
	if !dynamic {
		return nil, false, nil
	}
	// A dynamic section that cannot be read keeps everything: releasing less only costs memory.
	textrel, err1 := f.DynValue(elf.DT_TEXTREL)
	flags, err2 := f.DynValue(elf.DT_FLAGS)
	if err1 != nil || err2 != nil || len(textrel) > 0 || len(flags) > 0 && elf.DynFlag(flags[0])&elf.DF_TEXTREL != 0 {
		return nil, true, nil
	}
	return ranges, false, nil
}

// readOnlyMappingOf parses one line of /proc/self/maps ("start-end perms offset major:minor
// inode path") and reports the mapping when it maps exe and is not writable.
func readOnlyMappingOf(line string, exe unix.Stat_t) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) != 4 || f[1][0] != 'r' || f[1][1] != '-' {
		return mapping{}, false
	}
	span := strings.SplitN(f[0], "-", 2)
	dev := strings.SplitN(f[3], ":", 2)
	if len(span) != 2 || len(dev) != 2 {
		return mapping{}, false
	}
	ino, err1 := strconv.ParseUint(f[4], 10, 64)
	major, err2 := strconv.ParseUint(dev[0], 16, 32)
	minor, err3 := strconv.ParseUint(dev[1], 16, 32)
	lo, err4 := strconv.ParseUint(span[0], 16, 64)
	hi, err5 := strconv.ParseUint(span[1], 16, 64)
	off, err6 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil || hi <= lo || off > ^uint64(0)-(hi-lo) {
		return mapping{}, false
	}
	if ino != exe.Ino || uint32(major) != unix.Major(exe.Dev) || uint32(minor) != unix.Minor(exe.Dev) {
		return mapping{}, false
	}
	return mapping{lo, hi, off}, true
}
