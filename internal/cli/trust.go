package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/safeopen"
	"github.com/relaydev/relay/internal/trust"
)

// `relay trust` is how the person lets a project config name the commands relay
// runs (the direnv model); the rules live in internal/trust.

func newCmdTrust(f *Factory) *cobra.Command {
	var revoke, list bool
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Let this project's config run its commands (pre/post-command, linter) on this machine",
		Long: `A project's relaycode.config.json can name commands relay runs as you:
patch.preCommand, patch.postCommand, patch.linter and clipboard.readCommand. A config may
have come with a clone, so relay runs them only once you trust that exact file on this
machine. Until then apply, revert and watch run without them and say so; at a terminal
relay asks once. Any change to the file, or the same file in another directory, asks
again. An agent calling relay's tools (relay mcp) can never give trust.

relay trust shows the commands and records your trust ($RELAY_HOME/trust/);
--revoke takes it back; --list shows every config you trust.`,
		Example: `  relay trust
  relay trust --revoke
  relay trust --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := f.Home()
			if err != nil {
				return err
			}
			store := trust.Open(home)
			if list {
				return trustList(f, store)
			}
			cfg, err := f.ProjectConfig()
			if err != nil {
				return err
			}
			if revoke {
				n, err := store.Revoke(cfg.File)
				if err != nil {
					return err
				}
				if n == 0 {
					fmt.Fprintf(f.IO.ErrOut, "%s was not trusted; nothing to revoke.\n", cfg.File)
					return nil
				}
				fmt.Fprintf(f.IO.ErrOut, "No longer trusted: %s. relay runs none of its commands until you trust it again.\n", cfg.File)
				return nil
			}
			data, err := safeopen.ReadFile(cfg.File, true, 16<<20)
			if err != nil {
				return err
			}
			parsed, _, err := config.Parse(filepath.Base(cfg.File), data)
			if err != nil {
				return WithHint(err, "fix the file, then relay trust")
			}
			cmds := trust.Commands(parsed)
			if len(cmds) == 0 {
				fmt.Fprintf(f.IO.ErrOut, "%s names no commands.\n", cfg.File)
			} else {
				fmt.Fprintf(f.IO.ErrOut, "%s runs these commands as you:\n", cfg.File)
				for _, c := range cmds {
					fmt.Fprintf(f.IO.ErrOut, "  %s: %s\n", c.Key, c.Command)
				}
			}
			if err := store.Allow(cfg.File, data); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Trusted %s on this machine (until the file changes; relay trust --revoke takes it back).\n", cfg.File)
			return nil
		},
	}
	cmd.Flags().BoolVar(&revoke, "revoke", false, "stop trusting this project's config")
	cmd.Flags().BoolVar(&list, "list", false, "list the configs you trust, and whether each still has the trusted content")
	cmd.MarkFlagsMutuallyExclusive("revoke", "list")
	return cmd
}

func trustList(f *Factory, store trust.Store) error {
	all, err := store.List()
	if err != nil {
		return err
	}
	if len(all) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No config is trusted on this machine.")
		return nil
	}
	for _, r := range all {
		state := "current"
		if !r.Current {
			state = "changed since (not trusted as it is now)"
			if _, err := os.Stat(r.File); errors.Is(err, os.ErrNotExist) {
				state = "file gone"
			}
		}
		fmt.Fprintf(f.IO.Out, "%s\t%s\t%s\t%s\n", r.File, r.SHA256[:12], r.TrustedAt.Format("2006-01-02 15:04"), state)
	}
	return nil
}

// trustWritten records trust in a config the person just had relay write (relay init).
func trustWritten(ios *iostreams.IOStreams, homeDir func() (string, error), file string) {
	home, err := homeDir()
	if err != nil {
		return
	}
	data, err := safeopen.ReadFile(file, false, 16<<20)
	if err != nil {
		return
	}
	if err := trust.Open(home).Allow(file, data); err != nil {
		fmt.Fprintf(ios.ErrOut, "Warning: could not record trust in %s: %v (relay trust does it)\n", file, err)
	}
}
