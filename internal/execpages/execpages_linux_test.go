package execpages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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
		line   string
		ok     bool
		lo, hi uint64
	}{
		{"00400000-00f9e000 r-xp 00000000 fe:00 9978214   /tmp/relay", true, 0x400000, 0xf9e000},
		{"00f9e000-02243000 r--p 00b9e000 fe:00 9978214   /tmp/relay (deleted)", true, 0xf9e000, 0x2243000},
		{"02243000-022b5000 rw-p 01e43000 fe:00 9978214   /tmp/relay", false, 0, 0}, // writable data
		{"00400000-00f9e000 r-xp 00000000 fe:00 1234      /usr/lib/other", false, 0, 0},
		{"00400000-00f9e000 r-xp 00000000 fe:01 9978214   /mnt/relay", false, 0, 0}, // same inode, other device
		{"7ffd1000-7ffd3000 r--p 00000000 00:00 0         [vvar]", false, 0, 0},
		{"00f9e000-00400000 r--p 00000000 fe:00 9978214   /tmp/relay", false, 0, 0}, // end before start
		{"garbage", false, 0, 0},
		{"", false, 0, 0},
	} {
		lo, hi, ok := readOnlyMappingOf(tc.line, exe)
		if ok != tc.ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q: %#x-%#x %v, want %#x-%#x %v", tc.line, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// FuzzReadOnlyMappingOf: any line, however malformed, is parsed without a panic, and a
// range is given only for a non-writable mapping of the executable, start before end.
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
		lo, hi, ok := readOnlyMappingOf(line, exe)
		if !ok {
			return
		}
		fields := strings.Fields(line)
		if lo >= hi || fields[1][1] != '-' || fields[4] != "9978214" && strings.TrimLeft(fields[4], "0") != "9978214" {
			t.Fatalf("%q gave %#x-%#x", line, lo, hi)
		}
	})
}
