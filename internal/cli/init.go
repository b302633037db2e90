package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/prompt"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// InitOptions are the inputs of `relay init`.
type InitOptions struct {
	IO      *iostreams.IOStreams
	WorkDir func() (string, error)
	Home    func() (string, error)
	Force   bool
}

func newCmdInit(f *Factory) *cobra.Command {
	opts := &InitOptions{IO: f.IO, WorkDir: f.WorkDir, Home: f.Home}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Set up relay in this project and print the LLM system prompt",
		Long: `Set up relay in the current directory:

  - relaycode.config.json with every key and its default (projectId from
    package.json, go.mod, pyproject.toml or Cargo.toml, else the directory name)
  - .relaycode/ for transaction records, added to .gitignore
  - the user store $RELAY_HOME (default ~/.relay) with an API token

Then it prints the system prompt to give your LLM. ` + "`relay --init`" + ` is the same.`,
		Aliases: []string{"i"},
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return initRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing relaycode.config.json")
	return cmd
}

func initRun(ctx context.Context, opts *InitOptions) error {
	dir, err := opts.WorkDir()
	if err != nil {
		return err
	}
	// An initialised project is left as it is (exit 0) so "relay init && relay watch" can be
	// run again; only --force rewrites the config.
	var existing string
	for _, name := range config.FileNames {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() && !opts.Force {
			existing = name
			break
		}
	}

	var cfg *config.Config
	var projectID, source string
	if existing != "" {
		data, err := os.ReadFile(filepath.Join(dir, existing))
		if err != nil {
			return fmt.Errorf("read %s: %w", existing, err)
		}
		var warnings []string
		cfg, warnings, err = config.Parse(existing, data)
		for _, w := range warnings {
			fmt.Fprintln(opts.IO.ErrOut, "Warning: "+w)
		}
		if err != nil {
			return WithHint(err, "fix the file, or rewrite it with defaults: relay init --force")
		}
		projectID = cfg.ProjectID
	} else {
		projectID, source = detectProjectID(dir)
		cfg = config.Default(projectID)
		cfg.Schema = config.SchemaRef
		cfg.Patch.Linter = detectLinter(dir)
	}
	stateDir := filepath.Join(dir, config.StateDir)
	if err := txn.CheckStateDir(dir); err != nil {
		return err
	}
	_, statErr := os.Stat(stateDir)
	if err := os.MkdirAll(filepath.Join(stateDir, "undone"), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", config.StateDir, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(stateDir, "config.schema.json"), config.Schema(), 0o644); err != nil {
		return err
	}
	if existing == "" {
		data, err := config.Marshal(cfg)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, config.FileNames[0]), data, 0o644); err != nil {
			return err
		}
		// the person had relay write it: its commands are theirs (a config that was already
		// there, e.g. from a clone, stays untrusted until relay trust)
		trustWritten(opts.IO, opts.Home, filepath.Join(dir, config.FileNames[0]))
	}
	gitignoreUpdated, err := ensureGitignore(dir, config.StateDir+"/")
	if err != nil {
		return err
	}

	home, err := opts.Home()
	if err != nil {
		return err
	}
	created, err := relayhome.EnsureHome(home)
	if err != nil {
		return err
	}

	e := opts.IO.ErrOut
	if existing != "" {
		fmt.Fprintf(e, "relay is already initialised here: %s kept as it is (relay init --force rewrites it with defaults).\n", existing)
	} else {
		fmt.Fprintf(e, "Created %s (projectId %q from %s).\n", config.FileNames[0], projectID, source)
	}
	if existing == "" || statErr != nil {
		fmt.Fprintf(e, "Created %s/ for transaction records.\n", config.StateDir)
	}
	if gitignoreUpdated {
		fmt.Fprintf(e, "Added %s/ to .gitignore.\n", config.StateDir)
	}
	if created {
		fmt.Fprintf(e, "Created the relay store %s with a new API token.\n", home)
	}
	// Applying works anywhere, but relay git commit and autoGitBranch fail later without a
	// repository: say so now, while the user is setting up.
	switch err := txn.CheckGitRepo(ctx, dir); {
	case errors.Is(err, txn.ErrNoGitRepo):
		fmt.Fprintf(e, "Warning: %s is not in a git repository: relay applies answers here, but relay git commit (and git.autoGitBranch) need one; run git init to have them.\n", dir)
	case err != nil:
		fmt.Fprintf(e, "Warning: cannot run git (%v): relay git commit and the diffs of relay ask --include-diff need it; relay doctor says how to install it.\n", err)
	}
	fmt.Fprintln(e)
	system, err := prompt.System(projectID, cfg.Watcher.PreferredStrategy, detectLanguage(dir))
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(opts.IO.Out, prompt.InitMessage(system))
	return err
}

// detectLanguage picks the language of the prompt's code fences and example paths from
// the project's files; TypeScript (relaycode's examples) when nothing says otherwise.
func detectLanguage(dir string) prompt.Lang {
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	switch {
	case exists("tsconfig.json"):
		return prompt.Language("typescript")
	case exists("package.json"):
		if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil && bytes.Contains(data, []byte(`"typescript"`)) {
			return prompt.Language("typescript")
		}
		return prompt.Language("javascript")
	case exists("go.mod"):
		return prompt.Language("go")
	case exists("pyproject.toml"), exists("setup.py"), exists("requirements.txt"):
		return prompt.Language("python")
	case exists("Cargo.toml"):
		return prompt.Language("rust")
	}
	return prompt.Language("typescript")
}

// detectProjectID follows relaycode (package.json name, else the directory
// name), also reading the module name of go.mod, pyproject.toml and Cargo.toml.
func detectProjectID(dir string) (id, source string) {
	if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		var pkg struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &pkg) == nil && strings.TrimSpace(pkg.Name) != "" {
			return strings.TrimSpace(pkg.Name), "package.json"
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
		if m := regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?`).FindSubmatch(data); m != nil {
			return goModuleName(string(m[1])), "go.mod"
		}
	}
	for _, f := range []struct{ file, section string }{
		{"pyproject.toml", "project"}, {"pyproject.toml", "tool.poetry"}, {"Cargo.toml", "package"},
	} {
		if data, err := os.ReadFile(filepath.Join(dir, f.file)); err == nil {
			if name := tomlName(data, f.section); name != "" {
				return name, f.file
			}
		}
	}
	return filepath.Base(dir), "the directory name"
}

// goModuleName is the last element of a module path, without a /vN suffix:
// what a person calls the project.
func goModuleName(module string) string {
	base := path.Base(module)
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(base) && path.Dir(module) != "." {
		base = path.Base(path.Dir(module))
	}
	return base
}

// tomlName reads `name = "…"` in [section]; a full TOML parser is not worth
// a dependency for one key.
func tomlName(data []byte, section string) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	in := false
	nameRe := regexp.MustCompile(`^name\s*=\s*["']([^"']+)["']`)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			in = line == "["+section+"]"
			continue
		}
		if in {
			if m := nameRe.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// detectLinter picks a linter that exists for this kind of project; empty
// (disabled) when none is known.
func detectLinter(dir string) string {
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	switch {
	case exists("tsconfig.json"):
		return "npx tsc --noEmit"
	case exists("go.mod"):
		return "go vet ./..."
	}
	return ""
}

// ensureGitignore adds entry to dir/.gitignore unless a line already ignores
// it; it creates the file when missing and never duplicates the line.
func ensureGitignore(dir, entry string) (bool, error) {
	p := filepath.Join(dir, ".gitignore")
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		// A clone can make .gitignore a link to a file elsewhere: never read or replace through it.
		return false, fmt.Errorf(".gitignore is not a regular file; add the line %s to the file it stands for yourself", entry)
	}
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read .gitignore: %w", err)
	}
	bare := strings.Trim(entry, "/")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Trim(strings.TrimSpace(line), "/") == bare {
			return false, nil
		}
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString(entry + "\n")
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(p); err == nil {
		mode = st.Mode().Perm()
	}
	return true, atomicfile.WriteFile(p, b.Bytes(), mode)
}
