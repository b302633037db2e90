package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/workspace"
)

// AskOptions are the inputs of `relay ask`.
type AskOptions struct {
	IO      *iostreams.IOStreams
	WorkDir func() (string, error)
	Environ func() []string
	Home    func() (string, error)
	// Asker is injected by tests; nil means the real backends.
	Asker *ask.Asker

	To          string
	Prompt      string
	Repo        string
	ContextFile string
	ContextText string
	IncludeDiff bool
	DiffBase    string
	Sandbox     string
	Model       string
	Timeout     int
	// TimeoutGiven: --timeout was passed, so PHONE_A_FRIEND_TIMEOUT does not apply.
	TimeoutGiven bool
	Schema       string // FILE or inline JSON
	Verdict      bool
	Review       bool
	Base         string
	MaxDepth     int
	Session      string
	JSON         bool
	Stream       bool
	Background   bool
	// Team asks these friends Rounds times, each round reading the previous one by ref.
	Team   string
	Rounds int

	// Thread records the ask in a memory thread (--thread, else $RELAY_THREAD, else the
	// project's thread); Memory is the way to it (nil: not recorded).
	Thread string
	Getenv func(string) string
	Memory *workspace.Memory
	HasMCP bool // relay mcp exists: the friend may have relay's tools

	streamed bool // the answer's text was printed as it arrived
	// verdictRefs[i] is where answer i's verdict is stored in the thread;
	// priorVerdicts are earlier verdicts on the same diff the friend was pointed at.
	verdictRefs   []string
	priorVerdicts []string
}

func newCmdAsk(f *Factory) *cobra.Command {
	opts := &AskOptions{IO: f.IO, WorkDir: f.WorkDir, Environ: os.Environ, Home: f.Home, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "ask --to BACKEND --prompt TEXT|-",
		Short: "Phone a friend: ask another agent CLI (codex, claude, gemini, …) for advice",
		Long: `Send a prompt, optional context and the git diff to another coding agent CLI
and print its answer. The prompt goes to the friend on stdin inside the same
envelope as phone-a-friend, under byte limits (context 200,000; diff 300,000;
whole prompt 500,000) and a recursion guard (PHONE_A_FRIEND_DEPTH).
PHONE_A_FRIEND_BACKEND, _SANDBOX, _TIMEOUT and _INCLUDE_DIFF (true/1) set
defaults for flags you do not pass.

Backends: ` + strings.Join(backend.Names(), ", ") + `. --to a,b asks several in parallel.
Sandbox modes: read-only (default), workspace-write, danger-full-access.`,
		Example: `  relay ask --to codex --prompt "Review this change for bugs" --include-diff
  relay ask --to claude,gemini --prompt - --context-file notes.md < question.txt
  relay ask --to codex --diff-base main --prompt "Is this branch ready to merge?" --json
  relay ask --to claude --session design --prompt "And what about the error path?"
  relay ask --to claude --stream --prompt "Explain the retry loop in client.go"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// A flag left unset takes phone-a-friend's PHONE_A_FRIEND_* default (workspace.Ask).
			fl := cmd.Flags()
			if !fl.Changed("to") {
				opts.To = ""
			}
			if !fl.Changed("sandbox") {
				opts.Sandbox = ""
			}
			opts.TimeoutGiven = fl.Changed("timeout")
			if opts.IncludeDiff && opts.DiffBase != "" {
				return WithHint(Usagef("use --include-diff or --diff-base, not both"), "relay ask --help")
			}
			if opts.Base != "" {
				if opts.DiffBase != "" && opts.DiffBase != opts.Base {
					return WithHint(Usagef("--base and --diff-base name different refs"), "pass one of them")
				}
			}
			scope := ask.Request{IncludeDiff: opts.IncludeDiff, DiffBase: opts.DiffBase, Verdict: opts.Verdict, Review: opts.Review}
			scope.ReviewScope(opts.Base)
			opts.DiffBase, opts.Review = scope.DiffBase, scope.Review
			if opts.Review && opts.IncludeDiff {
				return WithHint(Usagef("--review sends every uncommitted change already; drop --include-diff"), "relay ask --review [--base REF]")
			}
			if opts.Team != "" {
				if fl.Changed("to") {
					return WithHint(Usagef("use --team or --to, not both"), "relay ask --team codex,claude --rounds 2 --prompt …")
				}
				if opts.Background || opts.Stream {
					return WithHint(Usagef("--team runs in the foreground without --stream"), "drop --background and --stream")
				}
				if opts.Rounds < 1 {
					return WithHint(Usagef("--rounds %d is out of range (1 to %d)", opts.Rounds, workspace.MaxTeamRounds), fmt.Sprintf("pass --rounds between 1 and %d (default %d)", workspace.MaxTeamRounds, workspace.DefaultTeamRounds))
				}
				opts.To = opts.Team
			} else if fl.Changed("rounds") {
				return WithHint(Usagef("--rounds needs --team"), "relay ask --team codex,claude --rounds 2 --prompt …")
			}
			if c, _, err := cmd.Root().Find([]string{"mcp"}); err == nil && c != cmd.Root() {
				opts.HasMCP = true
			}
			opts.Memory = f.memory()
			if opts.Background {
				return askBackground(cmd.Context(), opts)
			}
			return askRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to", "codex", "`BACKEND[,BACKEND…]` to ask: "+strings.Join(backend.Names(), ", "))
	fl.StringVar(&opts.Prompt, "prompt", "", "the question (`TEXT`, or - to read it from stdin)")
	fl.StringVar(&opts.Repo, "repo", "", "repository the friend works in (`DIR`; default: current directory)")
	fl.StringVar(&opts.ContextFile, "context-file", "", "`FILE` whose text is added as context (max 200,000 bytes)")
	fl.StringVar(&opts.ContextText, "context-text", "", "text added as context (max 200,000 bytes)")
	fl.BoolVar(&opts.IncludeDiff, "include-diff", false, "add the output of git diff (unstaged changes)")
	fl.StringVar(&opts.DiffBase, "diff-base", "", "add git diff `REF`...HEAD plus uncommitted changes (branch review)")
	fl.StringVar(&opts.Sandbox, "sandbox", backend.ReadOnly, "`MODE`: read-only, workspace-write or danger-full-access")
	fl.StringVar(&opts.Model, "model", "", "model passed to the friend CLI")
	fl.IntVar(&opts.Timeout, "timeout", ask.DefaultTimeout, "`SECONDS` before the friend is killed (with everything it started)")
	fl.IntVar(&opts.MaxDepth, "max-depth", ask.DefaultMaxDepth, "refuse when PHONE_A_FRIEND_DEPTH is at or above this")
	fl.StringVar(&opts.Session, "session", "", "continue the conversation with this `LABEL` (claude, codex, gemini, qwen)")
	fl.BoolVar(&opts.JSON, "json", false, "print {backend, model, answer, duration_ms, tokens, cost_usd} as JSON")
	fl.BoolVar(&opts.Stream, "stream", false, "print the answer as it arrives (with --json: every event as one JSON line, then the answer)")
	fl.StringVarP(&opts.Thread, "thread", "t", "", "record the ask in this memory `THREAD` (default $RELAY_THREAD, then the project's thread): the friend gets the header and refs, the answer is stored")
	fl.StringVar(&opts.Schema, "schema", "", "the answer must be JSON matching this JSON Schema (`FILE` or inline JSON)")
	fl.BoolVar(&opts.Verdict, "verdict", false, "ask for a verdict: approve or request-changes, with findings (file, line, severity)")
	fl.BoolVar(&opts.Review, "review", false, "review the uncommitted changes (with --base REF: the branch since REF); --prompt is optional")
	fl.StringVar(&opts.Base, "base", "", "with --review: review `REF`...HEAD plus uncommitted changes")
	fl.StringVar(&opts.Team, "team", "", "ask these `FRIENDS` (codex,claude,…) in rounds; each round reads the previous round's answers by ref")
	fl.IntVar(&opts.Rounds, "rounds", workspace.DefaultTeamRounds, fmt.Sprintf("with --team: at most `N` rounds (1 to %d); --verdict stops early when all agree", workspace.MaxTeamRounds))
	fl.BoolVar(&opts.Background, "background", false, "return at once with a job id; see it with relay ask jobs and relay ask result ID")
	cmd.AddCommand(newCmdAskSessions(f), newCmdAskForget(f), newCmdAskJobs(f), newCmdAskResult(f), newCmdAskRunJob(f))
	return cmd
}

func sessionStore(home func() (string, error)) (*ask.SessionStore, error) {
	h, err := home()
	if err != nil {
		return nil, WithHint(err, "set RELAY_HOME to a writable directory")
	}
	return &ask.SessionStore{Dir: filepath.Join(h, relayhome.AskDir)}, nil
}

func newCmdAskSessions(f *Factory) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the conversations --session can continue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := sessionStore(f.Home)
			if err != nil {
				return err
			}
			list, err := store.List()
			if err != nil {
				return WithHint(fmt.Errorf("cannot read sessions: %w", err), "check the permissions of "+store.Dir)
			}
			if jsonOut {
				if list == nil {
					list = []ask.SessionEntry{}
				}
				return writeJSON(f.IO.Out, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "No conversations yet; start one with: relay ask --to claude --session LABEL --prompt …")
				return nil
			}
			for _, e := range list {
				fmt.Fprintf(f.IO.Out, "%s\t%s\t%d turn(s)\t%s\t%s\n", e.Label, e.Backend, e.Turns, e.UpdatedAt.Local().Format("2006-01-02 15:04"), e.Repo)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")
	return cmd
}

func newCmdAskForget(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "forget LABEL",
		Short: "Forget a --session label (the friend CLI keeps its own history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := sessionStore(f.Home)
			if err != nil {
				return err
			}
			ok, err := store.Delete(args[0])
			if err != nil {
				return WithHint(fmt.Errorf("cannot update sessions: %w", err), "check the permissions of "+store.Dir)
			}
			if !ok {
				return WithHint(fmt.Errorf("no conversation is labelled %q", args[0]), "relay ask sessions")
			}
			fmt.Fprintf(f.IO.ErrOut, "Forgot %q.\n", args[0])
			return nil
		},
	}
}

// askJSON is the stable --json shape (the core's, shared with background jobs' results).
type askJSON = workspace.AnswerJSON

// askRequest reads what the flags say into the workspace and request both a foreground
// ask and a background job run.
func askRequest(opts *AskOptions) (*workspace.Workspace, workspace.AskRequest, error) {
	var req workspace.AskRequest
	if opts.Prompt == "-" {
		if opts.IO.IsStdinTTY() {
			fmt.Fprintln(opts.IO.ErrOut, "Reading the prompt from stdin; end it with Ctrl-D.")
		}
		b, err := io.ReadAll(io.LimitReader(opts.IO.In, ask.MaxPromptBytes+1))
		if err != nil {
			return nil, req, WithHint(fmt.Errorf("cannot read the prompt from stdin: %w", err), "pass it with --prompt TEXT instead")
		}
		opts.Prompt = string(b)
	}
	wd, err := opts.WorkDir()
	if err != nil {
		return nil, req, WithHint(fmt.Errorf("cannot find the current directory: %w", err), "cd into the repository and try again")
	}
	schemaJSON, err := readSchemaArg(opts.Schema, wd)
	if err != nil {
		return nil, req, err
	}
	ws := &workspace.Workspace{Principal: workspace.Person, WorkDir: wd, Home: opts.Home, Getenv: opts.Getenv, Environ: opts.Environ,
		Notes: opts.IO.ErrOut, Memory: opts.Memory, Thread: opts.Thread, Asker: opts.Asker}
	var to []string
	if opts.To != "" {
		to = strings.Split(opts.To, ",")
	}
	req = workspace.AskRequest{HasMCP: opts.HasMCP, TimeoutGiven: opts.TimeoutGiven, Request: ask.Request{
		To: to, Prompt: opts.Prompt, Repo: opts.Repo, ContextFile: opts.ContextFile, ContextText: opts.ContextText,
		IncludeDiff: opts.IncludeDiff, DiffBase: opts.DiffBase, Sandbox: opts.Sandbox, Model: opts.Model,
		TimeoutSeconds: opts.Timeout, MaxDepth: opts.MaxDepth, Session: opts.Session,
		Schema: schemaJSON, Verdict: opts.Verdict, Review: opts.Review,
	}}
	return ws, req, nil
}

func askRun(ctx context.Context, opts *AskOptions) error {
	ws, req, err := askRequest(opts)
	if err != nil {
		return err
	}
	if err := ws.AskDefaults(&req); err != nil {
		return err
	}
	names := workspace.Friends(req.To)
	if opts.Stream && !opts.JSON && len(names) > 1 {
		return WithHint(Usagef("--stream prints one friend's answer as it arrives"),
			"ask one friend with --stream, or add --json for one event a line from each friend")
	}
	prog := newAskProgress(opts.IO, names, opts.Stream, opts.JSON)
	req.OnEvent = prog.event
	if opts.Team != "" {
		tr, err := ws.Team(ctx, workspace.TeamRequest{AskRequest: req, Rounds: opts.Rounds})
		prog.finish()
		if err != nil {
			return err
		}
		return printTeam(opts, tr)
	}
	res, err := ws.Ask(ctx, req)
	prog.finish()
	if err != nil {
		return err
	}
	opts.streamed = prog.streamed
	opts.verdictRefs, opts.priorVerdicts = res.VerdictRefs, nil
	for _, a := range res.PriorVerdicts {
		opts.priorVerdicts = append(opts.priorVerdicts, a.Ref)
	}
	if len(opts.priorVerdicts) > 0 && !opts.JSON {
		fmt.Fprintf(opts.IO.ErrOut, "This diff was judged before: the friend was pointed at %s\n", strings.Join(opts.priorVerdicts, ", "))
	}
	for _, a := range res.Answers {
		if a.NewSession && a.Err == nil {
			fmt.Fprintf(opts.IO.ErrOut, "Started conversation %q with %s; continue it with --session %s\n", a.Session, a.Backend, a.Session)
		}
	}
	return printAnswers(opts, res.Answers, res.Records)
}

// printAnswers prints each answer; an answer stored in a thread (recs[i] set) is printed as
// its ref and preview, and the full text stays one `relay artifact get` away.
func printAnswers(opts *AskOptions, answers []ask.Answer, recs []*workspace.AnswerRecord) error {
	rec := func(i int) *workspace.AnswerRecord {
		if i < len(recs) {
			return recs[i]
		}
		return nil
	}
	text := func(i int) string {
		if r := rec(i); r != nil {
			return storedAnswer(r)
		}
		return answers[i].Text
	}
	out, errOut := opts.IO.Out, opts.IO.ErrOut
	failed := 0
	for _, a := range answers {
		if a.Err != nil {
			failed++
		}
	}
	if opts.JSON {
		docs := make([]askJSON, len(answers))
		for i, a := range answers {
			docs[i] = toAskJSON(a)
			docs[i].PriorVerdicts = opts.priorVerdicts
			if i < len(opts.verdictRefs) {
				docs[i].VerdictRef = opts.verdictRefs[i]
			}
			if r := rec(i); r != nil {
				docs[i].Answer, docs[i].Ref, docs[i].Truncated = r.Preview, r.Ref, r.Truncated
			}
		}
		var err error
		switch {
		case opts.Stream: // JSON Lines: the events came one a line, so does the answer
			for _, d := range docs {
				if err = writeJSONLine(out, d); err != nil {
					break
				}
			}
		case len(docs) == 1:
			err = writeJSON(out, docs[0])
		default:
			err = writeJSON(out, docs)
		}
		if err != nil {
			return err
		}
	}
	if len(answers) == 1 {
		a := answers[0]
		if a.Err != nil {
			if opts.JSON {
				return JSONShown(a.Err) // the answer object above holds the error
			}
			return a.Err
		}
		switch {
		case opts.JSON:
		case a.Verdict != nil:
			printVerdict(out, a.Verdict)
			if len(opts.verdictRefs) > 0 && opts.verdictRefs[0] != "" {
				fmt.Fprintf(out, "[verdict stored as artifact %s]\n", opts.verdictRefs[0])
			}
		case opts.streamed && rec(0) != nil:
			r := rec(0)
			fmt.Fprintf(out, "[stored as artifact %s]\n", r.ShortRef())
		case opts.streamed:
		default:
			fmt.Fprintln(out, text(0))
		}
		return nil
	}
	for i, a := range answers {
		if a.Err != nil {
			fmt.Fprintf(errOut, "Error (%s): %s\n", a.Backend, a.Err.Message)
			if a.Err.Hint != "" {
				fmt.Fprintf(errOut, "Try: %s\n", a.Err.Hint)
			}
			continue
		}
		if opts.JSON {
			continue
		}
		if i > 0 {
			fmt.Fprintln(out)
		}
		if a.Verdict != nil {
			fmt.Fprintf(out, "=== %s ===\n", a.Backend)
			printVerdict(out, a.Verdict)
			continue
		}
		fmt.Fprintf(out, "=== %s ===\n%s\n", a.Backend, text(i))
	}
	if failed > 0 {
		fmt.Fprintf(errOut, "%d of %d friends failed.\n", failed, len(answers))
		return ExitCode(exitError, ErrSilent)
	}
	return nil
}

// readSchemaArg reads --schema: inline JSON, or a file of at most 64 KiB.
func readSchemaArg(arg, wd string) (json.RawMessage, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return nil, nil
	}
	if strings.HasPrefix(arg, "{") {
		return json.RawMessage(arg), nil
	}
	path := arg
	if !filepath.IsAbs(path) {
		path = filepath.Join(wd, path)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, WithHint(Usagef("--schema %s is neither inline JSON nor a readable file", arg), `pass a file, or the schema itself: --schema '{"type":"object"}'`)
	}
	if fi.Size() > ask.MaxSchemaBytes {
		return nil, WithHint(Usagef("--schema %s is %d bytes; max %d bytes", arg, fi.Size(), ask.MaxSchemaBytes), "keep the schema under 64 KiB")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, WithHint(fmt.Errorf("cannot read --schema %s: %w", arg, err), "check the file's permissions")
	}
	return b, nil
}

// printVerdict shows a verdict for people; --json has the exact value.
func printVerdict(w io.Writer, v *ask.Verdict) {
	fmt.Fprintf(w, "Verdict: %s", v.Verdict)
	if v.Derived {
		fmt.Fprint(w, " (the friend said approve; its findings say otherwise)")
	}
	fmt.Fprintf(w, "\n%s\n", field(v.Summary))
	for _, f := range v.Findings {
		loc := f.File
		if f.Line != nil {
			loc += fmt.Sprintf(":%d", *f.Line)
		}
		fmt.Fprintf(w, "- [%s] %s: %s\n", field(f.Severity), field(loc), field(f.Title))
		if d := strings.TrimSpace(f.Detail); d != "" {
			fmt.Fprintf(w, "  %s\n", field(d))
		}
	}
}

func toAskJSON(a ask.Answer) askJSON { return workspace.ToAnswerJSON(a) }

// storedAnswer is what the caller sees of an answer stored in a thread: the ref and the
// preview (the answer itself when it fits the preview).
func storedAnswer(r *workspace.AnswerRecord) string {
	ref := r.ShortRef()
	if !r.Truncated {
		return r.Preview + "\n[stored as artifact " + ref + "]"
	}
	return r.Preview + "\n[preview; the whole answer is artifact " + ref + ": relay artifact get " + ref + " --out -]"
}
