package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
)

// TestFlagUsageNamesDefaultOnce walks every command: a flag's help line says its default at
// most once (a usage text that explains the default, plus pflag's own "(default x)", read
// as two defaults).
func TestFlagUsageNamesDefaultOnce(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	root := NewRootCmd(newFactory(ios, "test"))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if n := strings.Count(line, "(default"); n > 1 {
				t.Errorf("%s: a flag names its default %d times:\n%s", c.CommandPath(), n, line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestExitCodesDocumented: the README states the exit codes in the words `relay --help` uses.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), ExitCodesDoc) {
		t.Errorf("README.md does not contain %q", ExitCodesDoc)
	}
	ios, _, _, _ := iostreams.Test()
	if root := NewRootCmd(newFactory(ios, "test")); !strings.Contains(root.Long, ExitCodesDoc) {
		t.Errorf("relay --help does not end with %q", ExitCodesDoc)
	}
	if !strings.Contains(ExitCodesDoc, "3 the daemon is not running") || exitNotRunning != 3 {
		t.Errorf("exit code %d of relay status is not documented as 3", exitNotRunning)
	}
}
