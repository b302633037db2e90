package txn

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/apply/patch"
)

// NotFoundError is a transaction reference that matches nothing.
type NotFoundError struct {
	Ref   string
	Index bool
}

func (e *NotFoundError) Error() string {
	if e.Index {
		return fmt.Sprintf("no transaction left to revert at index %s (reverts and reverted transactions are skipped; name one by uuid to revert it)", e.Ref)
	}
	return fmt.Sprintf("could not find a committed transaction %q", e.Ref)
}

// Find resolves a uuid or a 1-based index. Indexes count committed
// transactions newest first, skipping reverts and transactions already
// reverted, so `relay revert` repeated walks back through history.
func Find(projectDir, ref string, key []byte) (*State, error) {
	all, ignored, err := List(projectDir, key)
	if err != nil {
		return nil, err
	}
	for _, ig := range ignored {
		if id := recordID(ig.Record); strings.EqualFold(id, ref) || len(ref) >= 8 && strings.HasPrefix(id, strings.ToLower(ref)) {
			return nil, fmt.Errorf("relay does not act on %s: %s", ig.Record, ig.Why)
		}
	}
	if ref == "" {
		ref = "1"
	}
	if n, err := strconv.Atoi(ref); err == nil && len(ref) < 9 {
		if n < 1 {
			return nil, fmt.Errorf("index %d is out of range; 1 is the latest transaction", n)
		}
		reverted := revertedBy(all)
		i := 0
		for _, s := range all {
			if s.RevertOf != "" || reverted[s.UUID] != "" {
				continue
			}
			i++
			if i == n {
				return s, nil
			}
		}
		// Eight digits may also be a uuid prefix (11111111-…); try that before giving up.
		if len(ref) < 8 {
			return nil, &NotFoundError{Ref: ref, Index: true}
		}
	}
	for _, s := range all {
		if strings.EqualFold(s.UUID, ref) || len(ref) >= 8 && strings.HasPrefix(s.UUID, strings.ToLower(ref)) {
			return s, nil
		}
	}
	return nil, &NotFoundError{Ref: ref}
}

// revertedBy maps a transaction uuid to the revert that undid it; a revert
// that was itself reverted no longer counts.
func revertedBy(all []*State) map[string]string {
	by := map[string]string{}
	byUUID := make(map[string]*State, len(all))
	for _, s := range slices.Backward(all) { // oldest first
		byUUID[s.UUID] = s
		if s.RevertOf == "" {
			continue
		}
		by[s.RevertOf] = s.UUID
		if t := byUUID[s.RevertOf]; t != nil && t.RevertOf != "" && by[t.RevertOf] == t.UUID {
			delete(by, t.RevertOf)
		}
	}
	return by
}

// RevertedByMap maps each transaction in all (as List returns them) to the
// revert that undid it.
func RevertedByMap(all []*State) map[string]string { return revertedBy(all) }

// RevertedBy reports the uuid of the revert transaction that undid st, if any.
func RevertedBy(projectDir string, st *State, key []byte) (string, error) {
	all, _, err := List(projectDir, key)
	if err != nil {
		return "", err
	}
	return revertedBy(all)[st.UUID], nil
}

// Changed lists the paths of st whose content or mode differ from what the
// transaction left (a revert would discard those later edits).
func Changed(projectDir string, st *State) ([]string, error) {
	proj, err := openProject(projectDir)
	if err != nil {
		return nil, err
	}
	defer proj.close()
	var out []string
	for name, want := range st.After {
		cur, err := proj.read(name)
		if err != nil {
			out = append(out, name)
			continue
		}
		if fingerprint(cur.content, cur.exists, cur.mode) != want {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// RevertRequest builds the inverse of st as a new transaction: every path
// goes back to its snapshot (content and mode), files the transaction
// created are deleted.
func RevertRequest(st *State) (Request, error) {
	// Only the paths the record says the transaction changed (what relay log shows) are
	// written back: a snapshot entry no file change names is never acted on.
	listed := map[string]bool{}
	for _, f := range st.Files {
		listed[f.Path] = true
		if f.From != "" {
			listed[f.From] = true
		}
	}
	paths := make([]string, 0, len(listed))
	for p := range listed {
		if _, ok := st.Snapshot[p]; !ok {
			return Request{}, fmt.Errorf("transaction %s lists %s as changed but holds no snapshot of it; relay cannot revert it", st.UUID, p)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	resp := &patch.Response{
		Control: patch.Control{
			ProjectID:     st.ProjectID,
			UUID:          uuid.NewString(),
			GitCommitMsg:  revertMsg(st),
			PromptSummary: "Revert of " + st.UUID,
		},
		Reasoning: append([]string{"Reverting transaction " + st.UUID + "."}, st.Reasoning...),
	}
	modes := map[string]fs.FileMode{}
	for _, p := range paths {
		old := st.Snapshot[p]
		if old == nil {
			if st.After != nil && st.After[p] == "absent" {
				continue // it did not exist afterwards either
			}
			resp.Operations = append(resp.Operations, patch.Operation{Kind: patch.OpDelete, Path: p})
			continue
		}
		resp.Operations = append(resp.Operations, patch.Operation{Kind: patch.OpWrite, Path: p, Content: *old, Strategy: patch.Replace})
		modes[p] = st.mode(p)
	}
	if len(resp.Operations) == 0 {
		return Request{}, fmt.Errorf("transaction %s changed no files; nothing to revert", st.UUID)
	}
	return Request{Response: resp, RevertOf: st.UUID, Modes: modes, PruneDirs: st.CreatedDirs}, nil
}

func revertMsg(st *State) string {
	subject := firstLine(strings.TrimSpace(st.GitCommitMsg))
	if subject == "" {
		subject = st.UUID
	}
	return fmt.Sprintf("Revert \"%s\"\n\nThis reverts relay transaction %s.", subject, st.UUID)
}

func sortUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
