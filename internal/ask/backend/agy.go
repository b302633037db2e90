package backend

import (
	"fmt"
	"strings"
	"time"
)

// agySpec drives Google's Antigravity CLI, `agy` (the friend for a personal
// Google account since Gemini CLI refuses those sign-ins). relay runs it the
// way phone-a-friend 4.1.1 does (--add-dir, --print-timeout, --sandbox,
// --mode plan), except that the prompt goes on stdin, which agy reads when
// stdin is not a terminal, instead of --prompt in argv. It is read-only by
// design: plan mode is the only mode relay can hold it to (agy's --sandbox
// restricts only its terminal commands), so relay never offers it a write
// sandbox. Its answer is plain text on stdout.
type agySpec struct{}

func (agySpec) name() string  { return "agy" }
func (agySpec) exe() string   { return "agy" }
func (agySpec) label() string { return "agy" }
func (agySpec) installHint() string {
	return "curl -fsSL https://antigravity.google/cli/install.sh | bash"
}
func (agySpec) sandboxes() []string  { return []string{ReadOnly} }
func (agySpec) sessions() bool       { return false }
func (agySpec) emptyMessage() string { return "agy completed without producing output" }
func (agySpec) parser() outputParser { return &agyParser{} }

// agyPrintTimeout leaves agy a few seconds to stop itself (and say so) before
// relay's own timeout kills it.
func agyPrintTimeout(d time.Duration) string {
	if d <= 0 {
		d = 600 * time.Second
	}
	if d > 10*time.Second {
		d -= 5 * time.Second
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

func (agySpec) plan(req Request, exe, _ string) (Invocation, error) {
	if req.Sandbox != ReadOnly {
		return Invocation{}, &Error{Backend: "agy", Kind: KindRefused,
			Message: fmt.Sprintf("agy is read-only by design: relay runs it in plan mode and cannot give it %s", req.Sandbox),
			Hint:    "drop --sandbox for agy, or ask a friend that can write (codex, claude, gemini, qwen)"}
	}
	args := []string{"--add-dir", req.Repo, "--print-timeout", agyPrintTimeout(req.Timeout), "--sandbox", "--mode", "plan"}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt}, nil
}

// agyParser passes agy's stdout on as the answer while it comes; stderr
// carries its sign-in and timeout complaints.
type agyParser struct {
	answer strings.Builder
	errs   []string
}

func (a *agyParser) line(s *stream, stderr bool, raw []byte) {
	line := string(raw)
	if stderr {
		if t := strings.TrimSpace(line); t != "" {
			a.errs = append(a.errs, t)
		}
		stderrProblem(s, line)
		return
	}
	if a.answer.Len() == 0 && strings.TrimSpace(line) == "" {
		return
	}
	a.answer.WriteString(line + "\n")
	s.text(line + "\n")
}

func (a *agyParser) result(_ *stream, _ Invocation, _ Output) (Result, error) {
	return Result{Answer: a.answer.String()}, nil
}

func (a *agyParser) detail(_ *stream, _ Invocation, out Output) string {
	d := defaultDetail(out)
	if strings.Contains(d, "print timeout after") {
		d += "\n(agy's own --print-timeout ended it)"
	}
	return d
}
