package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/clipboard"
	"github.com/relaydev/relay/internal/apply/prompt"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// PromptOptions are the inputs of `relay prompt`.
type PromptOptions struct {
	IO       *iostreams.IOStreams
	Config   func() (*config.Config, error)
	Strategy string
	Copy     bool
	// WriteClipboard puts text on the clipboard (replaced in tests).
	WriteClipboard func(text string) (tool string, err error)
}

func newCmdPrompt(f *Factory) *cobra.Command {
	opts := &PromptOptions{IO: f.IO, Config: f.ProjectConfig, WriteClipboard: clipboard.Write}
	cmd := &cobra.Command{
		Use:   "prompt",
		Short: "Print the system prompt that teaches your LLM relay's response format",
		Long: `Print the system prompt for your LLM: rules 1-6 (whole files, delete
blocks, the final YAML block with this project's projectId) and, unless the
strategy is replace, how to send patches (new-unified, multi-search-replace),
renames and commit messages.

The strategy defaults to watcher.preferredStrategy from relaycode.config.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("strategy") {
				opts.Strategy = ""
			}
			return promptRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Strategy, "strategy", "auto", "patch format to ask for: "+strings.Join(prompt.Strategies, ", "))
	cmd.Flags().BoolVar(&opts.Copy, "copy", false, "also put the prompt on the clipboard")
	_ = cmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions(prompt.Strategies, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func promptRun(opts *PromptOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	strategy := opts.Strategy
	if strategy == "" {
		strategy = cfg.Watcher.PreferredStrategy
	}
	text, err := prompt.System(cfg.ProjectID, strategy, detectLanguage(cfg.Dir))
	if err != nil {
		return UsageError(err)
	}
	if _, err := fmt.Fprint(opts.IO.Out, text); err != nil {
		return err
	}
	if opts.Copy {
		tool, err := opts.WriteClipboard(text)
		if err != nil {
			return WithHint(fmt.Errorf("copy the prompt to the clipboard: %w", err), "relay doctor   (shows which clipboard tools are missing)")
		}
		fmt.Fprintf(opts.IO.ErrOut, "Copied the prompt to the clipboard (%s).\n", tool)
	}
	return nil
}
