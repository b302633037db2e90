package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMain runs relay itself when the test re-executes its own binary, so a test can
// watch a real start of relay.
func TestMain(m *testing.M) {
	if os.Getenv("RELAY_TEST_RUN_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// Every relay command, `relay version` included, runs the package inits of the whole
// binary before main. relay's own packages therefore do their set-up on first use
// (sync.OnceValue: regexps, schemas, tables) and not at init; these bounds are far
// below what a compiled regexp costs (internal/mcp's two regexps alone made 2,428
// allocations). GODEBUG=inittrace=1 counts each init's allocations exactly, so the
// test holds on a loaded machine, where a timing would not.
const (
	maxInitAllocs = 32
	maxInitBytes  = 4 << 10
	maxInitTotal  = 16 << 10
)

func TestOwnInitsAllocateLittle(t *testing.T) {
	initLine := regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	cmd := exec.Command(os.Args[0], "version")
	cmd.Env = append(os.Environ(), "RELAY_TEST_RUN_MAIN=1", "GODEBUG=inittrace=1", "RELAY_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("relay version: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(string(out), "relay ") {
		t.Fatalf("relay version printed %q", out)
	}
	seen, total := 0, 0
	for line := range strings.Lines(stderr.String()) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !strings.HasPrefix(m[1], "github.com/relaydev/relay/") {
			continue
		}
		seen++
		bytes, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		total += bytes
		if allocs > maxInitAllocs || bytes > maxInitBytes {
			t.Errorf("init of %s allocates %d bytes in %d allocations (bound %d bytes, %d); move the work to first use (sync.OnceValue)",
				m[1], bytes, allocs, maxInitBytes, maxInitAllocs)
		}
	}
	if seen < 10 {
		t.Fatalf("inittrace listed %d relay packages; did the trace format change?\n%s", seen, stderr.String())
	}
	if total > maxInitTotal {
		t.Errorf("relay's own inits allocate %d bytes in all (bound %d)", total, maxInitTotal)
	}
}

// Packages whose inits cost every command a measurable share of its start (or which
// would bring such packages): relay makes its S3 calls itself (internal/memory/blob) so
// that none of these is linked. go list reads the import graph, so this is exact.
var keptOut = []string{
	"github.com/minio/",                     // s3utils regexps, and the chain below
	"github.com/klauspost/cpuid/",           // CPU feature probes, trapped by the hypervisor on a VM
	"github.com/rs/xid",                     // reads /etc/machine-id at init
	"gopkg.in/ini.v1",                       // the shared credentials file is parsed by blob
	"github.com/aws/aws-sdk-go-v2/service/", // endpoint-rule regexps; relay uses only the signer
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/BurntSushi/toml", // reads /etc/localtime at init; relay reads TOML with go-toml/v2
}

func TestHeavyPackagesNotLinked(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/relaydev/relay/cmd/relay").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for pkg := range strings.Lines(string(out)) {
		for _, bad := range keptOut {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("relay links %s; its init runs before every command (see keptOut)", strings.TrimSpace(pkg))
			}
		}
	}
}
