package execpages

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/relaydev/relay/internal/testsupport"
)

// TestMain removes the programs TestDropKeepsRelocatedPages builds.
func TestMain(m *testing.M) { testsupport.Main(m) }

// written lives in the executable's writable data: Drop must leave what the process wrote.
var written = [4096 * 4]byte{1, 2, 3}

func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestDrop(t *testing.T) {
	for i := range written {
		written[i] = byte(i*7 + 1)
	}
	before := rssFileKB(t)
	st, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if st.Mappings < 2 || st.Bytes <= 0 {
		t.Errorf("released %+v, want the code and the read-only data at least", st)
	}
	if after >= before {
		t.Errorf("file-backed RSS %d kB before, %d kB after: nothing was released", before, after)
	}
	for i := range written {
		if written[i] != byte(i*7+1) {
			t.Fatalf("byte %d of written data is %d after Drop, want %d", i, written[i], byte(i*7+1))
		}
	}
	// The code runs on as before: this call, the checks above and the test runner's own
	// code fault back in.
	if _, err := Drop(); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnlyMappingOf(t *testing.T) {
	exe := unix.Stat_t{Ino: 9978214, Dev: unix.Mkdev(0xfe, 0)}
	for _, tc := range []struct {
		line string
		ok   bool
		want mapping
	}{
		{"00400000-00f9e000 r-xp 00000000 fe:00 9978214   /tmp/relay", true, mapping{0x400000, 0xf9e000, 0}},
		{"00f9e000-02243000 r--p 00b9e000 fe:00 9978214   /tmp/relay (deleted)", true, mapping{0xf9e000, 0x2243000, 0xb9e000}},
		{"02243000-022b5000 rw-p 01e43000 fe:00 9978214   /tmp/relay", false, mapping{}}, // writable data
		{"00400000-00f9e000 r-xp 00000000 fe:00 1234      /usr/lib/other", false, mapping{}},
		{"00400000-00f9e000 r-xp 00000000 fe:01 9978214   /mnt/relay", false, mapping{}}, // same inode, other device
		{"7ffd1000-7ffd3000 r--p 00000000 00:00 0         [vvar]", false, mapping{}},
		{"00f9e000-00400000 r--p 00000000 fe:00 9978214   /tmp/relay", false, mapping{}},       // end before start
		{"00400000-00f9e000 r--p zz000000 fe:00 9978214   /tmp/relay", false, mapping{}},       // offset not hex
		{"00400000-00f9e000 r--p ffffffffffffffff fe:00 9978214 /tmp/relay", false, mapping{}}, // file range past 2^64
		{"garbage", false, mapping{}},
		{"", false, mapping{}},
	} {
		m, ok := readOnlyMappingOf(tc.line, exe)
		if ok != tc.ok || m != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.line, m, ok, tc.want, tc.ok)
		}
	}
}

func TestMappingOverlaps(t *testing.T) {
	relro := [][2]uint64{{0x1e24000, 0x2090000}}
	for _, tc := range []struct {
		m    mapping
		want bool
	}{
		{mapping{0x2224000, 0x2490000, 0x1e24000}, true},  // the relocated range itself
		{mapping{0x2000000, 0x2225000, 0x1c00000}, true},  // ends inside it
		{mapping{0x400000, 0xfa3000, 0}, false},           // the code before it
		{mapping{0xfa3000, 0x2224000, 0xba3000}, false},   // ends where it starts
		{mapping{0x2490000, 0x2500000, 0x2090000}, false}, // starts where it ends
	} {
		if got := tc.m.overlaps(relro); got != tc.want {
			t.Errorf("%+v overlaps %#x: %v, want %v", tc.m, relro, got, tc.want)
		}
	}
	if (mapping{0x400000, 0x500000, 0}).overlaps(nil) {
		t.Error("a mapping overlaps no ranges")
	}
}

// TestDropKeepsRelocatedPages runs Drop in programs built as users and packagers build
// relay: static (make build) and position-independent (go build -buildmode=pie, what Linux
// distributions package), then runs code that reads what the dynamic loader relocated.
// Dropping those pages crashed the position-independent build (a segmentation fault at
// the daemon's start-up).
func TestDropKeepsRelocatedPages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []string
		relocate bool
	}{
		{"static", nil, false},
		{"pie", []string{"-buildmode=pie"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// CGO_ENABLED=0: no C toolchain needed
			bin := testsupport.BuildWith(t, "./internal/execpages/testdata/dropper", "dropper", []string{"CGO_ENABLED=0"}, tc.flags...)
			ranges, all, err := relocatedRanges(bin)
			if err != nil {
				t.Fatal(err)
			}
			if all || (len(ranges) > 0) != tc.relocate {
				t.Errorf("relocated ranges %#x (all: %v); want some: %v", ranges, all, tc.relocate)
			}
			out, err := exec.Command(bin).CombinedOutput()
			if err != nil {
				t.Fatalf("the program failed after Drop: %v\n%s", err, out)
			}
			var mappings, kept int
			if _, err := fmt.Sscanf(string(out), "mappings=%d kept=%d", &mappings, &kept); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if mappings < 1 || (kept > 0) != tc.relocate {
				t.Errorf("released %d mappings, kept %d; want some released, some kept: %v", mappings, kept, tc.relocate)
			}
		})
	}
}

// FuzzReadOnlyMappingOf: any line, however malformed, is parsed without a panic, and a
// mapping is given only for a non-writable mapping of the executable, start before end,
// whose file range fits in 64 bits.
func FuzzReadOnlyMappingOf(f *testing.F) {
	exe := unix.Stat_t{Ino: 9978214, Dev: unix.Mkdev(0xfe, 0)}
	for _, s := range []string{
		"00400000-00f9e000 r-xp 00000000 fe:00 9978214   /tmp/relay",
		"02243000-022b5000 rw-p 01e43000 fe:00 9978214   /tmp/relay",
		"7ffd1000-7ffd3000 r--p 00000000 00:00 0         [vvar]",
		"ffffffffffffffff-0 r--p 0 fe:00 9978214",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := readOnlyMappingOf(line, exe)
		if !ok {
			return
		}
		fields := strings.Fields(line)
		if m.lo >= m.hi || m.off+(m.hi-m.lo) < m.off || fields[1][1] != '-' || fields[4] != "9978214" && strings.TrimLeft(fields[4], "0") != "9978214" {
			t.Fatalf("%q gave %+v", line, m)
		}
	})
}
