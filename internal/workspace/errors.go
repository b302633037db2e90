package workspace

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/memory/client"
)

// HintError is an error with the next step already chosen for it.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// WithHint attaches the next step to err (shown as "Try: <hint>"); nil stays nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &HintError{Err: err, Hint: hint}
}

// OpError is a transaction operation that failed; Op and Source choose the next step.
type OpError struct {
	// Op is what was done: "apply", "watch", "edit" or "revert".
	Op string
	// Source is where an applied answer came from: a file, "-" for stdin, "" otherwise.
	Source string
	// Reverts is the transaction a revert undoes.
	Reverts string
	Err     error
}

func (e *OpError) Error() string { return e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// AnswerError is an answer that is not a relay response (or was cut off).
type AnswerError struct {
	Source string // as in OpError; "" is an answer passed in directly
	Err    error
}

func (e *AnswerError) Error() string {
	var (
		cut *patch.CutOffError
		amb *patch.AmbiguousError
		fe  *patch.FormatError
		np  *patch.NotPatchError
		nt  *txn.NotThisProjectError
	)
	switch {
	case errors.As(e.Err, &cut), errors.As(e.Err, &amb), errors.As(e.Err, &nt):
		return fmt.Sprintf("%s: %v", sourceName(e.Source), e.Err)
	case errors.As(e.Err, &fe):
		return fmt.Sprintf("%s: %v; nothing was applied", sourceName(e.Source), fe)
	case errors.As(e.Err, &np) && brokenControl(np):
		return fmt.Sprintf("%s is not a relay response: %v", sourceName(e.Source), np)
	case errors.As(e.Err, &np):
		return fmt.Sprintf("%s holds no changes relay can read: %s", sourceName(e.Source), np.Reason)
	}
	return fmt.Sprintf("%s: %v", sourceName(e.Source), e.Err)
}

func (e *AnswerError) Unwrap() error { return e.Err }

func sourceName(src string) string {
	switch src {
	case "":
		return "the answer"
	case "-":
		return "stdin"
	}
	return src
}

// AlreadyRevertedError is a revert of a transaction a later one already reverted.
type AlreadyRevertedError struct{ UUID, By string }

func (e *AlreadyRevertedError) Error() string {
	return fmt.Sprintf("transaction %s was already reverted by %s", e.UUID, e.By)
}

// ChangedError is a revert of a transaction whose files changed since it was applied.
type ChangedError struct {
	UUID  string
	Files []string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the files of transaction %s changed since it was applied: %s; reverting would lose those edits", e.UUID, strings.Join(e.Files, ", "))
}

// ErrCancelled is an operation the person declined when asked.
var ErrCancelled = errors.New("cancelled")

// ThreadError is a daemon error met while working on a thread ("" when none was chosen yet).
type ThreadError struct {
	Thread string
	Err    error
}

func (e *ThreadError) Error() string { return e.Err.Error() }
func (e *ThreadError) Unwrap() error { return e.Err }

// MemoryError marks a daemon error with the thread it was about, so Explain can name a
// next step on that thread; nil stays nil.
func MemoryError(err error, thread string) error {
	if err == nil {
		return nil
	}
	return &ThreadError{Thread: thread, Err: err}
}

// Explain splits err into the message to show and the next step ("Try: …") for who met
// it. It is the one mapping from relay's errors to next steps: the CLI prints it under
// "Error:", relay mcp returns it in the tool result.
func Explain(err error, p Principal) (message, hint string) {
	message = err.Error()
	var (
		he   *HintError
		ae   *ask.Error
		op   *OpError
		ans  *AnswerError
		rev  *AlreadyRevertedError
		chg  *ChangedError
		api  *client.APIError
		unr  *client.UnreachableError
		nf   *txn.NotFoundError
		thre *ThreadError
	)
	switch {
	case errors.As(err, &he):
		return message, he.Hint
	case errors.As(err, &ae):
		if p == Person && ae.Backend == "" { // a friend's own words stay as they are
			return lowerFirst(ae.Message), ae.Hint
		}
		return ae.Message, ae.Hint
	case errors.As(err, &ans):
		return message, answerHint(ans, p)
	case errors.As(err, &rev):
		if p == Agent {
			return message, `revert the revert to bring it back: edit_files {"op":"revert","ref":"` + rev.By + `"}`
		}
		return message, "relay revert " + rev.By + "   (to bring the change back)"
	case errors.As(err, &chg):
		if p == Agent {
			return message, `set "force":true to discard the later edits`
		}
		return message, "relay revert " + chg.UUID + " --force   (discard the later edits)"
	case errors.As(err, &nf):
		if p == Agent {
			return message, `list transactions with read {"op":"log"}`
		}
		return message, "relay log"
	case errors.As(err, &op):
		return message, txnHint(op, p)
	case errors.As(err, &api), errors.As(err, &unr):
		thread := ""
		if errors.As(err, &thre) {
			thread = thre.Thread
		}
		return memoryHint(err, thread, p)
	}
	return message, ""
}

// answerHint is the next step after an answer that did not parse.
func answerHint(e *AnswerError, p Principal) string {
	var (
		cut *patch.CutOffError
		amb *patch.AmbiguousError
		fe  *patch.FormatError
		nt  *txn.NotThisProjectError
		np  *patch.NotPatchError
	)
	switch {
	case errors.As(e.Err, &cut):
		return "copy the whole answer, or ask the LLM to finish it"
	case errors.As(e.Err, &amb) && p == Agent:
		return fmt.Sprintf(`send it again with "format": %q (or another of the formats found) to read only that one`, amb.Found[0].Format)
	case errors.As(e.Err, &amb):
		src := e.Source
		if src == "" {
			src = "FILE"
		}
		return fmt.Sprintf("read only the one meant: relay apply %s --format %s   (--dry-run shows the plan first)", src, amb.Found[0].Format)
	case errors.As(e.Err, &fe):
		return "ask the LLM to resend the answer with that fixed"
	case errors.As(e.Err, &nt):
		return "save the answer and run relay apply FILE in the project it is for"
	case errors.As(e.Err, &np) && brokenControl(np) && p == Agent:
		return "end the answer with the YAML block (projectId, uuid, changeSummary); relay prompt prints the format"
	case errors.As(e.Err, &np) && brokenControl(np):
		return "relay prompt   (the LLM needs these instructions; its answer must end with the YAML block)"
	case p == Agent:
		return "send a relay answer (relay prompt prints the format), a git diff, a codex patch, SEARCH/REPLACE blocks with their paths, edit JSON, or whole files in code blocks that name their path"
	}
	return "relay prompt   (instructions for the LLM), or save an answer holding a diff, a codex patch, SEARCH/REPLACE blocks, edits, or files in code blocks that name their path"
}

// txnHint is the next step after a transaction that did not commit.
func txnHint(op *OpError, p Principal) string {
	var (
		skip    *txn.SkipError
		fail    *txn.Failure
		busy    *txn.BusyError
		pathErr *txn.PathError
		need    *txn.NeedsApprovalError
	)
	err := op.Err
	file := op.Source
	again := "relay apply " + file
	if file == "" {
		again = "copy the corrected response again"
	}
	switch {
	case errors.As(err, &busy):
		return "wait for the other relay to finish (relay watch may be running in another terminal)"
	case errors.As(err, &skip):
		switch skip.Kind {
		case txn.SkipDuplicate:
			return "relay log   (it is already applied; ask the LLM for a new uuid to apply it again)"
		case txn.SkipWrongProject:
			return "relay prompt   (give the LLM this project's id), or run relay in the right project"
		}
		return ""
	case errors.As(err, &need) && need.ConfigChange:
		switch {
		case p == Agent:
			return "a config change needs the user: ask them to read it and run relay apply FILE --allow-config-change"
		case op.Op == "revert":
			return "relay revert " + op.Reverts + " -y --allow-config-change   (after reading the config change it brings back)"
		case file == "":
			return "save the answer to a file, read the config change, then relay apply FILE --allow-config-change"
		}
		return "read the config change (relay apply --dry-run " + file + "), then " + again + " --allow-config-change"
	case errors.As(err, &need):
		switch {
		case p == Agent:
			return `the project's approvalMode is manual: ask the user to apply it (relay apply FILE -y), or set "approvalMode": "auto" in relaycode.config.json`
		case len(need.LintErrors) > 0 && file == "":
			return "fix the linter errors above (ask the LLM for a corrected answer); only if they are acceptable: relay watch -y"
		case len(need.LintErrors) > 0:
			return "fix the linter errors above (ask the LLM for a corrected answer); only if they are acceptable: " + again + " -y"
		case file == "":
			return "relay watch -y, or run relay watch in a terminal"
		}
		return "review the change (relay apply --dry-run " + file + "), then " + again + " -y"
	case !errors.As(err, &fail):
		return ""
	case fail.Step == txn.StepInterrupted, errors.Is(err, txn.ErrRejected):
		return ""
	case errors.As(err, &pathErr):
		return "ask the LLM to use paths relative to the project root"
	case fail.Step == txn.StepPatch && p == Agent:
		return `re-read the file and send old_string exactly as it is now (op=edit), or resend that block (op=answer); dry_run shows where blocks land`
	case fail.Step == txn.StepPatch:
		return "ask the LLM to resend that block against the current file; relay apply --dry-run FILE shows where blocks land"
	case fail.Step == txn.StepPreCommand:
		return "fix the command (patch.preCommand in the config) or the project, then " + again
	case fail.Step == txn.StepPostCommand:
		return "fix the command (patch.postCommand in the config) or the project, then " + again
	case fail.RollbackErr != nil:
		return "relay log   (retries the rollback)"
	}
	return ""
}

// memoryHint is the next step after a daemon error; an agent is pointed at the memory
// tool where it can act itself, and its version conflict names the current version.
func memoryHint(err error, thread string, p Principal) (string, string) {
	var ue *client.UnreachableError
	var ae *client.APIError
	msg := err.Error()
	if errors.As(err, &ae) && p == Agent {
		switch {
		case ae.Code == "version_conflict":
			return fmt.Sprintf("%s (current version: %d)", ae.Message, ae.CurrentVersion),
				fmt.Sprintf(`re-read with read {"op":"header"}, then send the patch again with "version":%d`, ae.CurrentVersion)
		case ae.Code == "invalid_patch" || ae.Code == "test_failed":
			return ae.Message, "fix that operation (RFC 6902: op, path, value/from) and send the patch again"
		case ae.Status == 404 && strings.HasPrefix(ae.Message, "thread "):
			return ae.Message, `omit thread to use this project's thread, or make one with write_memory {"op":"new_thread"}`
		case ae.Status == 404 && thread != "":
			return ae.Message, `find refs with read {"op":"search","query":"…"} or {"op":"events"}`
		case ae.Code == "name_taken":
			return ae.Message, `use that thread (pass its id as "thread"), or choose another name`
		case ae.Code == "invalid_args" || ae.Code == "blocked_address":
			return ae.Message, "check the arguments; fetch reaches public http(s) URLs only"
		}
	}
	switch {
	case errors.As(err, &ue):
		return msg, "relay up"
	case errors.As(err, &ae):
		switch {
		case ae.Status == 401:
			return msg, tokenHint(ae.TokenFrom)
		case ae.Code == "version_conflict" && thread != "":
			return msg, "relay state get --thread " + thread
		case ae.Status == 404 && strings.HasPrefix(ae.Message, "thread "):
			return msg, "relay runs"
		case ae.Status == 404 && strings.HasPrefix(ae.Message, "version ") && thread != "":
			return msg, "relay state get --thread " + thread
		case ae.Status == 404 && thread != "":
			return msg, "relay artifact ls --thread " + thread
		}
	}
	return msg, ""
}

// lowerFirst lower-cases a message's first letter unless it starts an acronym or a name
// written in capitals ("HTTP 500", "PATH").
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsUpper(r) {
		return s
	}
	if next, _ := utf8.DecodeRuneInString(s[n:]); unicode.IsUpper(next) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// brokenControl reports a relay answer whose control block is there but invalid.
func brokenControl(np *patch.NotPatchError) bool {
	return strings.HasPrefix(np.Reason, "invalid control block")
}

// tokenHint is the next step after the daemon refused a token, naming where it came from.
func tokenHint(from string) string {
	switch from {
	case "RELAY_TOKEN":
		return "RELAY_TOKEN holds a token this daemon refuses: unset it to use the one in relay's config.json, or set the daemon's"
	case "":
		return "give the daemon's API token (the \"token\" in the config.json of its RELAY_HOME) as RELAY_TOKEN"
	}
	return "the token in " + from + " is not this daemon's; restart the daemon of that RELAY_HOME (relay down; relay up), or set RELAY_TOKEN to its token"
}
