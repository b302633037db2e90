package cli

import (
	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/config"
)

func newCmdConfig(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect relaycode.config.json",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of relaycode.config.json",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := f.IO.Out.Write(config.Schema())
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (file values plus defaults) as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.ProjectConfig()
			if err != nil {
				return err
			}
			data, err := config.Marshal(cfg)
			if err != nil {
				return err
			}
			_, err = f.IO.Out.Write(data)
			return err
		},
	})
	return cmd
}
